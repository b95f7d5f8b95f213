// Command guest is the weka_public_dataset module: the weka core behind the parser ABI.
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared (see wasm-modules/build.sh).
package main

import (
	"github.com/lensfn/lensfn/wasm-modules/internal/guest/parserguest"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/weka"
)

// A reactor runs init but never main.
func init() {
	parserguest.Serve(weka.Descriptor(), func(string) tracefmt.Parser { return weka.New() })
}

func main() {}
