package main

import (
	evaluationapi "github.com/lensfn/lensfn/functions/evaluation-api"
	"github.com/lensfn/lensfn/runtime/fn"
)

func main() { fn.Main(evaluationapi.Name, evaluationapi.Build) }
