package main

import (
	"github.com/lensfn/lensfn/wasm-modules/internal/guest/stepcostguest"
	"github.com/lensfn/lensfn/wasm-modules/stepcost"
)

// A reactor runs init but never main.
func init() { stepcostguest.Serve(stepcost.Descriptor()) }

func main() {}
