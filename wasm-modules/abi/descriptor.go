package abi

import (
	"encoding/json"
	"fmt"
)

// Descriptor is what a module returns from ExportDescribe, as JSON:
//
//	{"abi_version":2,"kind":"trace-parser","name":"mooncake_trace","version":"1.0.0",
//	 "capabilities":{"supports_trace_range":true,"supports_scale_factor":true}}
type Descriptor struct {
	ABIVersion   uint32          `json:"abi_version"`
	Kind         string          `json:"kind"`
	Name         string          `json:"name"`
	Version      string          `json:"version"`
	Description  string          `json:"description,omitempty"`
	Capabilities map[string]bool `json:"capabilities,omitempty"`
	// TraceRange says in words what a trace range selects in this format (the backend catalogue
	// shows it); empty means the host's own rule (section 7 of ABI.md).
	TraceRange string `json:"trace_range,omitempty"`
}

// ParseDescriptor decodes and validates a descriptor.
func ParseDescriptor(b []byte) (Descriptor, error) {
	var d Descriptor
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("module descriptor is not valid JSON: %w", err)
	}
	if d.Kind != KindTraceParser && d.Kind != KindLatencyCalculator {
		return d, fmt.Errorf("module descriptor kind %q is neither %q nor %q", d.Kind, KindTraceParser, KindLatencyCalculator)
	}
	if d.Name == "" {
		return d, fmt.Errorf("module descriptor has no name")
	}
	if d.Version == "" {
		return d, fmt.Errorf("module descriptor of %q has no version", d.Name)
	}
	return d, nil
}

// ParseBegin is the JSON a host passes to ExportParseBegin: {"source":"conversation_trace.jsonl"}.
// Source names the input in error messages. A module with CapabilitySelectsTraceRange also gets
// the window on its normalised axis, in ms: {"source":"t.json","start_ms":60000,"end_ms":120000}
// (end_ms absent: to the end); other modules never do.
type ParseBegin struct {
	Source  string   `json:"source"`
	StartMs float64  `json:"start_ms,omitempty"`
	EndMs   *float64 `json:"end_ms,omitempty"`
}
