package latency

import "github.com/lensfn/lensfn/wasm-modules/abi"

// Module is a built-in calculator as its WASM module describes itself: a name, a version,
// what it computes, and the TTFT rule. The guests in constant/guest and pertoken/guest serve
// one each; the simulator's native built-ins are the same rules (New).
type Module struct {
	Name, Version, Description string
	TTFT                       TTFTFunc
}

// The built-in calculator modules.
var (
	Constant = Module{Name: NameConstant, Version: "1.0.0", TTFT: ConstantTTFT,
		Description: "TTFT = time-to-first-token (P/D: kv-cache-transfer-latency); gaps = inter-token-latency; load factor on TTFT and gaps"}
	PerToken = Module{Name: NamePerToken, Version: "1.0.0", TTFT: PerTokenTTFT,
		Description: "TTFT = prefill-overhead + uncached prompt tokens x prefill-time-per-token (P/D: prompt tokens x kv-cache-transfer-time-per-token); gaps = inter-token-latency"}
)

// Descriptor is what the module reports through lens_describe.
func (m Module) Descriptor() abi.Descriptor {
	return abi.Descriptor{ABIVersion: abi.Version, Kind: abi.KindLatencyCalculator, Name: m.Name, Version: m.Version, Description: m.Description}
}

// New parses a configuration (ParseConfig) into the module's calculator.
func (m Module) New(configJSON []byte) (*Model, error) { return ParseModel(configJSON, m.TTFT) }
