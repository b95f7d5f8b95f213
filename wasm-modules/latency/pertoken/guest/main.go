package main

import (
	"github.com/lensfn/lensfn/wasm-modules/internal/guest/calcguest"
	"github.com/lensfn/lensfn/wasm-modules/latency/pertoken"
)

// A reactor runs init but never main.
func init() { calcguest.Serve(pertoken.Descriptor(), pertoken.New) }

func main() {}
