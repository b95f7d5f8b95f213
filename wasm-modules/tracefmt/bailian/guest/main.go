package main

import (
	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/internal/guest/parserguest"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/bailian"
)

// A reactor runs init but never main.
func init() {
	parserguest.Serve(bailian.Descriptor(), func(abi.ParseBegin) tracefmt.Parser { return bailian.New() })
}

func main() {}
