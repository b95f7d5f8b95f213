package main

import (
	"github.com/lensfn/lensfn/functions/benchmarkrunner"
	"github.com/lensfn/lensfn/runtime/fn"
)

func main() { fn.Main(benchmarkrunner.Name, benchmarkrunner.Build) }
