package main

import (
	benchmarkrunner "github.com/lensfn/lensfn/functions/benchmark-runner"
	"github.com/lensfn/lensfn/runtime/fn"
)

func main() { fn.Main(benchmarkrunner.Name, benchmarkrunner.Build) }
