package main

import (
	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/internal/guest/parserguest"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/baseten"
)

// A reactor runs init but never main.
func init() {
	parserguest.Serve(baseten.Descriptor(), func(abi.ParseBegin) tracefmt.Parser { return baseten.New() })
}

func main() {}
