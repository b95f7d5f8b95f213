package main

import (
	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/internal/guest/parserguest"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/burstgpt"
)

// A reactor runs init but never main.
func init() {
	parserguest.Serve(burstgpt.Descriptor(), func(abi.ParseBegin) tracefmt.Parser { return burstgpt.New() })
}

func main() {}
