package main

import (
	workfloworchestrator "github.com/lensfn/lensfn/functions/workflow-orchestrator"
	"github.com/lensfn/lensfn/runtime/fn"
)

func main() { fn.Main(workfloworchestrator.Name, workfloworchestrator.Build) }
