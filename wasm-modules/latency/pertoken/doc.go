// Package pertoken is the "per-token" latency calculator module: the latency core's
// PerTokenTTFT rule (TTFT is prefill-overhead plus prefill-time-per-token for every
// uncached prompt token, std-dev prefill-time-std-dev, or kv-cache-transfer-time-per-token
// for every prompt token when the prefill ran remotely; every inter-token gap is
// inter-token-latency) with the descriptor the guest reports. Imports: the standard library
// and wasm-modules/latency, wasm-modules/abi.
package pertoken
