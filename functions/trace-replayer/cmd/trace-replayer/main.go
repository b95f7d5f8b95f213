package main

import (
	tracereplayer "github.com/lensfn/lensfn/functions/trace-replayer"
	"github.com/lensfn/lensfn/runtime/fn"
)

func main() { fn.Main(tracereplayer.Name, tracereplayer.Build) }
