// Package router benchmarks functions/inference-router's added latency: the same open-loop
// constant-rate load (LENS_ROUTER_RATE req/s for LENS_ROUTER_SECONDS) against an inference
// simulator process directly and through a router in front of it, on loopback; the difference of
// the latency percentiles is what the router adds. The figures and the exact command are in
// BENCHMARKS.md under "Inference router"; run.sh adds a wrk measurement of the same pair.
//
// As a test package under tests/ it may import anything in the module; it imports the router
// package, tests/bench/benchkit and the standard library and runs the simulator as a separate
// process.
package router
