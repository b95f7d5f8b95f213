package parserguest

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/internal/guest"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt"
)

var (
	newParser func(source string) tracefmt.Parser
	current   tracefmt.Parser
	output    []byte
	emit      tracefmt.Emit = func(r *abi.TraceRequest) error {
		output = abi.AppendRecord(output, r)
		return nil
	}
)

// Serve makes the module a trace parser: d is its descriptor, factory builds a core per source.
func Serve(d abi.Descriptor, factory func(source string) tracefmt.Parser) {
	d.Kind = abi.KindTraceParser
	guest.SetDescriptor(d)
	newParser = factory
}

//go:wasmexport lens_parse_begin
func parseBegin(ptr, length uint32) uint64 {
	var begin abi.ParseBegin
	if err := json.Unmarshal(guest.Bytes(ptr, length), &begin); err != nil {
		return guest.Fail(fmt.Errorf("lens_parse_begin: invalid JSON: %w", err))
	}
	if newParser == nil {
		return guest.Fail(errors.New("module has no parser wired"))
	}
	current = newParser(begin.Source)
	output = output[:0]
	return abi.Pack(0, 0)
}

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
	return guest.Packed(output)
}

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
