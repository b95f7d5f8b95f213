package main

import (
	"github.com/lensfn/lensfn/functions/tracereplayer"
	"github.com/lensfn/lensfn/runtime/fn"
)

func main() { fn.Main(tracereplayer.Name, tracereplayer.Build) }
