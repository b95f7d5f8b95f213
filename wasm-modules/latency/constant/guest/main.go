package main

import (
	"github.com/lensfn/lensfn/wasm-modules/internal/guest/calcguest"
	"github.com/lensfn/lensfn/wasm-modules/latency/constant"
)

// A reactor runs init but never main.
func init() { calcguest.Serve(constant.Descriptor(), constant.New) }

func main() {}
