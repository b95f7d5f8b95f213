package main

import (
	simulationapi "github.com/lensfn/lensfn/functions/simulation-api"
	"github.com/lensfn/lensfn/runtime/fn"
)

func main() { fn.Main(simulationapi.Name, simulationapi.Build) }
