// Package inferencerouter is Lensfn's inference router: an OpenAI-compatible
// reverse proxy in front of N simulator (or vLLM) replicas that picks a
// replica per request by a routing profile (random, load, prefix-affinity,
// optimized, precise-prefix, pd), plus a plain round-robin endpoint under
// /balanced/ (the kubernetes-service baseline). The deployer starts one
// router per routed deployment; it consumes no events.
//
// It is a data-plane function like the simulator, so it does not run on
// runtime/fn: its clients are OpenAI clients (errors are OpenAI error
// bodies, not problem+json), it carries the clients' own Authorization
// header through to the replicas, and every microsecond of per-request
// middleware counts against the added-latency budget (p50 <= 100 us at
// 10k req/s). It owns its flags, probes, drain and a private Prometheus
// registry, as the simulator does.
//
// net/http, not fasthttp: the router's cost is dominated by the upstream
// round trip and the JSON peek at the prompt, net/http's Transport gives
// per-chunk flushing of SSE and connection reuse without a second HTTP
// stack, and fasthttp keeps its single home in the simulator (measured
// figures in BENCHMARKS.md, "Inference router").
//
// It imports the standard library, runtime/jsoncursor (the prompt peek),
// runtime/kvblock (the KV block hash the replicas' events name),
// client_golang and github.com/go-zeromq/zmq4 (its second home, next to the simulator's
// kvcache: the precise-prefix profile subscribes to the replicas' KV events
// over ZMQ, the other end of the simulator's publisher, and there is no
// runtime package for ZMQ because only these two functions speak it).
// Nothing outside functions/inference-router imports it except its cmd and
// tests/.
package inferencerouter
