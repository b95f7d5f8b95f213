package main

import (
	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/internal/guest/parserguest"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/mooncake"
)

// A reactor runs init but never main.
func init() {
	parserguest.Serve(mooncake.Descriptor(), func(abi.ParseBegin) tracefmt.Parser { return mooncake.New() })
}

func main() {}
