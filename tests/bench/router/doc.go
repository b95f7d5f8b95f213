// Package router benchmarks functions/inference-router's added latency: the same open-loop
// constant-rate load (LENS_ROUTER_RATE req/s for LENS_ROUTER_SECONDS) against an inference
// simulator process directly and through a router process in front of it, on loopback; the
// difference of the latency percentiles is what the router adds. Beside the latencies it reports
// what each process spent in CPU per request (the sender, the simulator, the router), because on
// a two-core machine the three share the cores and the sum decides whether the routed leg
// queues. The sender is its own (sender_linux_test.go: one epoll loop on a locked thread, one
// write and one read per request) so that it costs about what wrk does. The figures and the
// exact command are in BENCHMARKS.md under "Inference router"; run.sh adds a wrk measurement of
// the same pair.
//
// As a test package under tests/ it may import anything in the module; it imports
// tests/bench/benchkit and the standard library and runs the simulator and the router as
// separate processes (built from their cmd packages, or LENS_SIM_BIN and LENS_ROUTER_BIN). The
// benchmark is Linux only (epoll, /proc).
package router
