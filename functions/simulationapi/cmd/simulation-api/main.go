package main

import (
	"github.com/lensfn/lensfn/functions/simulationapi"
	"github.com/lensfn/lensfn/runtime/fn"
)

func main() { fn.Main(simulationapi.Name, simulationapi.Build) }
