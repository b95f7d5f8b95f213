package tracefmttest

import (
	"encoding/json"
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

// SameInChunks parses input whole and in chunk-byte pieces and fails the test when the pieces
// change the outcome or the records. It returns the records, nil when the input is rejected.
func SameInChunks(t testing.TB, parse func(input string, chunk int) ([]abi.TraceRequest, error), input []byte, chunk int) []abi.TraceRequest {
	t.Helper()
	whole, errWhole := parse(string(input), len(input)+1)
	split, errSplit := parse(string(input), chunk)
	if (errWhole == nil) != (errSplit == nil) {
		t.Fatalf("chunking changed the outcome: %v vs %v", errWhole, errSplit)
	}
	if errWhole != nil {
		return nil
	}
	a, _ := json.Marshal(whole)
	b, _ := json.Marshal(split)
	if string(a) != string(b) {
		t.Fatalf("chunking changed the records:\n%s\n%s", a, b)
	}
	return whole
}
