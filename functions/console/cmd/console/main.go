package main

import (
	"github.com/lensfn/lensfn/functions/console"
	"github.com/lensfn/lensfn/runtime/fn"
)

func main() { fn.Main(console.Name, console.Build) }
