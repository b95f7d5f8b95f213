package main

import (
	"github.com/lensfn/lensfn/wasm-modules/internal/guest/calcguest"
	"github.com/lensfn/lensfn/wasm-modules/latency"
)

// A reactor runs init but never main.
func init() { calcguest.Serve(latency.Constant) }

func main() {}
