package main

import (
	"github.com/lensfn/lensfn/functions/evaluationapi"
	"github.com/lensfn/lensfn/runtime/fn"
)

func main() { fn.Main(evaluationapi.Name, evaluationapi.Build) }
