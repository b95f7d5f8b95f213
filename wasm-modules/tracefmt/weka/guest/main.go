package main

import (
	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/internal/guest/parserguest"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/weka"
)

// A reactor runs init but never main.
func init() {
	parserguest.Serve(weka.Descriptor(), func(b abi.ParseBegin) tracefmt.Parser { return weka.NewWindowed(b.StartMs, b.EndMs) })
}

func main() {}
