// Command guest is the bailian_trace module: the bailian core behind the parser ABI.
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared (see wasm-modules/build.sh).
package main

import (
	"github.com/lensfn/lensfn/wasm-modules/internal/guest/parserguest"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/bailian"
)

// A reactor runs init but never main.
func init() {
	parserguest.Serve(bailian.Descriptor(), func(string) tracefmt.Parser { return bailian.New() })
}

func main() {}
