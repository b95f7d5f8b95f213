// Command guest is the baseten_trace module: the baseten core behind the parser ABI.
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared (see wasm-modules/build.sh).
package main

import (
	"github.com/lensfn/lensfn/wasm-modules/internal/guest/parserguest"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/baseten"
)

// A reactor runs init but never main.
func init() {
	parserguest.Serve(baseten.Descriptor(), func(string) tracefmt.Parser { return baseten.New() })
}

func main() {}
