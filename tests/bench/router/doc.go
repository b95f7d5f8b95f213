// Package router benchmarks functions/inferencerouter's added latency: the same open-loop
// constant-rate load (LENS_ROUTER_RATE req/s for LENS_ROUTER_SECONDS) against an upstream
// directly and through a router process in front of it, on loopback; the difference of the
// latency percentiles is what the router adds. Beside the latencies it reports what each process
// spent in CPU per request (the sender, the upstream, the router), because on a two-core machine
// they share the cores and the sum decides whether the routed leg queues.
//
// Two upstreams, each with its own router: an inference simulator process (what the router
// really fronts), and the lean responder (responder_linux_test.go), which answers every request
// with the bytes the simulator answered the benchmark's request, captured once at start, from
// one epoll loop: one read and one write per request, about what the sender costs, where the
// simulator also tokenizes, schedules and encodes (BENCHMARKS.md has both figures). Measuring a
// proxy against such a canned upstream is how proxy benchmarks isolate the hop: the router's
// added latency does not depend on the upstream's own work, but on two cores that work competes
// with the router for the CPU and, once the leg queues, inflates every process's cost. The
// simulator legs stay beside it, unchanged. The sender is its own too (sender_linux_test.go: one
// epoll loop on a locked thread, one write and one read per request) so that it costs about what
// wrk does. The figures and the exact command are in BENCHMARKS.md under "Inference router";
// run.sh adds a wrk measurement of the simulator pair.
//
// As a test package under tests/ it may import anything in the module; it imports
// tests/bench/benchkit and the standard library and runs the simulator, the routers and the lean
// responder (this test binary again, with LENS_ROUTER_RESPONDER_LISTEN set) as separate
// processes (built from their cmd packages, or LENS_SIM_BIN and LENS_ROUTER_BIN). The benchmark
// is Linux only (epoll, /proc).
package router
