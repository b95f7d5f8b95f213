package main

import (
	"github.com/lensfn/lensfn/functions/workfloworchestrator"
	"github.com/lensfn/lensfn/runtime/fn"
)

func main() { fn.Main(workfloworchestrator.Name, workfloworchestrator.Build) }
