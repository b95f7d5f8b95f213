package main

import (
	inventoryapi "github.com/lensfn/lensfn/functions/inventory-api"
	"github.com/lensfn/lensfn/runtime/fn"
)

func main() { fn.Main(inventoryapi.Name, inventoryapi.Build) }
