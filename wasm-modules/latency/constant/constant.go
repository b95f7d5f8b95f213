package constant

import (
	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/latency"
)

// Name and Version as the module describes itself.
const (
	Name    = "constant"
	Version = "1.0.0"
)

// Descriptor is what the module reports through lens_describe.
func Descriptor() abi.Descriptor {
	return abi.Descriptor{ABIVersion: abi.Version, Kind: abi.KindLatencyCalculator, Name: Name, Version: Version,
		Description: "TTFT = time-to-first-token (P/D: kv-cache-transfer-latency); gaps = inter-token-latency; load factor on TTFT and gaps"}
}

// New parses the configuration and returns the calculator (the core's ConstantTTFT rule).
func New(configJSON []byte) (*latency.Model, error) {
	return latency.ParseModel(configJSON, latency.ConstantTTFT)
}
