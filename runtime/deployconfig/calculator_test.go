package deployconfig

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestLatencyCalculatorTakesNoHostPath: a configuration picks constant, per-token or a loaded
// module; a path (which on a replica names a file on the deployer's host) is a field error.
func TestLatencyCalculatorTakesNoHostPath(t *testing.T) {
	content := func(calc string) json.RawMessage {
		raw, _ := json.Marshal(calc)
		return json.RawMessage(`{"model":{"name":"m"},"decode":{},"simulator":{"latency-calculator":` + string(raw) + `}}`)
	}
	for _, bad := range []string{"/etc/passwd", "/tmp/evil.wasm", "evil.wasm", "../x", "./calc", "wasm:../../x", "wasm:a/b", "wasm:", "C:\\x.wasm"} {
		_, err := Parse(ProviderBaselineVLLM, content(bad))
		locs := fieldLocs(t, err)
		if !slices.ContainsFunc(locs, func(l string) bool {
			return strings.HasPrefix(l, "body.content.simulator.latency-calculator: must be engine, constant, per-token or wasm:")
		}) {
			t.Errorf("%q: %q", bad, locs)
		}
	}
	for _, good := range []string{"engine", "constant", "per-token", "wasm:per_token_poly", "wasm:my-calc.v2", ""} {
		if _, err := Parse(ProviderBaselineVLLM, content(good)); err != nil {
			t.Errorf("%q refused: %v", good, err)
		}
	}
}
