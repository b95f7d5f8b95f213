package pertoken

import (
	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/latency"
)

// Name and Version as the module describes itself.
const (
	Name    = "per-token"
	Version = "1.0.0"
)

// Descriptor is what the module reports through lens_describe.
func Descriptor() abi.Descriptor {
	return abi.Descriptor{ABIVersion: abi.Version, Kind: abi.KindLatencyCalculator, Name: Name, Version: Version,
		Description: "TTFT = prefill-overhead + uncached prompt tokens x prefill-time-per-token (P/D: prompt tokens x kv-cache-transfer-time-per-token); gaps = inter-token-latency"}
}

// New parses the configuration and returns the calculator (the core's PerTokenTTFT rule).
func New(configJSON []byte) (*latency.Model, error) {
	return latency.ParseModel(configJSON, latency.PerTokenTTFT)
}
