// Package constant is the "constant" latency calculator module: the latency core's
// ConstantTTFT rule (TTFT is time-to-first-token with its std-dev, or
// kv-cache-transfer-latency for a request whose prefill ran remotely; every inter-token
// gap is inter-token-latency) with the descriptor the guest reports. Imports: the standard
// library and wasm-modules/latency, wasm-modules/abi.
package constant
