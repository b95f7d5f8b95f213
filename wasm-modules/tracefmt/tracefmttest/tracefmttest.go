package tracefmttest

import (
	"io"
	"testing"

	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt"
)

// Parse feeds input to p in chunks of chunk bytes and returns every record after an
// encode/decode round trip through the ABI's record encoding, as the host receives it.
func Parse(t testing.TB, p tracefmt.Parser, input io.Reader, chunk int) ([]abi.TraceRequest, error) {
	t.Helper()
	var out []abi.TraceRequest
	err := tracefmt.ParseReader(p, input, chunk, func(r *abi.TraceRequest) error {
		var c abi.TraceRequest
		if _, err := abi.DecodeRecord(abi.AppendRecord(nil, r), &c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
		return nil
	})
	return out, err
}
