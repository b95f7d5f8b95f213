package pertoken

import (
	"math"

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

// New parses the configuration and returns the calculator.
func New(configJSON []byte) (*latency.Model, error) { return latency.ParseModel(configJSON, ttft) }

func ttft(c *latency.Config, in latency.Input) (mean, std int64, loaded bool) {
	if in.RemotePrefill {
		return satMul(c.KVCacheTransferTimePerToken, in.PromptTokens), c.KVCacheTransferTimeStdDev, false
	}
	uncached := max(in.PromptTokens-in.CachedPromptTokens, 0)
	return satAdd(c.PrefillOverhead, satMul(c.PrefillTimePerToken, uncached)), c.PrefillTimeStdDev, true
}

func satMul(d int64, n int) int64 {
	if n != 0 && d > math.MaxInt64/int64(n) {
		return math.MaxInt64
	}
	return d * int64(n)
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
