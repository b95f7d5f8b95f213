package main

import (
	"github.com/lensfn/lensfn/functions/resultanalyzer"
	"github.com/lensfn/lensfn/runtime/fn"
)

func main() { fn.Main(resultanalyzer.Name, resultanalyzer.Build) }
