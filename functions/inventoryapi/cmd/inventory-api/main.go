package main

import (
	"github.com/lensfn/lensfn/functions/inventoryapi"
	"github.com/lensfn/lensfn/runtime/fn"
)

func main() { fn.Main(inventoryapi.Name, inventoryapi.Build) }
