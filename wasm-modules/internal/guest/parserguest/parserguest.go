package parserguest

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"

	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/internal/guest"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt"
)

var (
	newParser func(begin abi.ParseBegin) tracefmt.Parser
	current   tracefmt.Parser
	output    []byte
	emit      tracefmt.Emit = func(r *abi.TraceRequest) error {
		output = abi.AppendRecord(output, r)
		return nil
	}
)

// Serve makes the module a trace parser: d is its descriptor, factory builds a core per source
// from what lens_parse_begin carries (the source's name and, for a module that selects its
// trace range itself, the window).
func Serve(d abi.Descriptor, factory func(begin abi.ParseBegin) tracefmt.Parser) {
	d.Kind = abi.KindTraceParser
	guest.SetDescriptor(d)
	newParser = factory
}

//lint:ignore U1000 exported to the host by the //go:wasmexport below (staticcheck does not see exports)
//go:wasmexport lens_parse_begin
func parseBegin(ptr, length uint32) uint64 {
	var begin abi.ParseBegin
	if err := json.Unmarshal(guest.Bytes(ptr, length), &begin); err != nil {
		return guest.Fail(fmt.Errorf("lens_parse_begin: invalid JSON: %w", err))
	}
	if newParser == nil {
		return guest.Fail(errors.New("module has no parser wired"))
	}
	current = newParser(begin)
	output = output[:0]
	return abi.Pack(0, 0)
}

//lint:ignore U1000 exported to the host by the //go:wasmexport below (staticcheck does not see exports)
//go:wasmexport lens_parse_feed
func parseFeed(ptr, length uint32) uint64 {
	if current == nil {
		return guest.Fail(errors.New("lens_parse_feed called before lens_parse_begin"))
	}
	output = output[:0]
	if err := current.Feed(guest.Bytes(ptr, length), emit); err != nil {
		current = nil
		return guest.Fail(err)
	}
	// Goroutines of a reactor run only when the export's goroutine yields, and that
	// includes the GC's background mark workers: without this yield a cycle never
	// finishes inside a long parse and the heap grows into the memory cap (a JSONL stream
	// of WEKA traces trapped at 20 MiB; with it, it parses in a few MiB).
	runtime.Gosched()
	return guest.Packed(output)
}

//lint:ignore U1000 exported to the host by the //go:wasmexport below (staticcheck does not see exports)
//go:wasmexport lens_parse_end
func parseEnd() uint64 {
	if current == nil {
		return guest.Fail(errors.New("lens_parse_end called before lens_parse_begin"))
	}
	output = output[:0]
	err := current.End(emit)
	current = nil
	if err != nil {
		return guest.Fail(err)
	}
	return guest.Packed(output)
}
