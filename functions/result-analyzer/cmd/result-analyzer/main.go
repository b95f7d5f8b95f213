package main

import (
	resultanalyzer "github.com/lensfn/lensfn/functions/result-analyzer"
	"github.com/lensfn/lensfn/runtime/fn"
)

func main() { fn.Main(resultanalyzer.Name, resultanalyzer.Build) }
