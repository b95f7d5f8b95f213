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
// fasthttp, not net/http, on both sides (the front end and each replica's
// pooled client, a fasthttp.HostClient), because the router's whole job is
// the proxy hop and net/http's cost per hop was the bottleneck: measured
// on this 2-core host (BENCHMARKS.md, "Inference router"), the net/http
// router spent ~140 us of CPU per request end to end (a server goroutine
// and request/header maps per request, a client Transport with a read and
// a write goroutine per connection and channel hand-offs per request) and
// capped at 5-7k req/s on its core, so the 10k req/s target was out of
// reach whatever the routing cost. fasthttp reuses request and response
// objects and buffers per connection and runs one goroutine per
// connection on each side. What net/http gave for free is kept
// explicitly: an upstream body is streamed (it becomes the client
// response's body stream, written chunked with a flush per read for SSE:
// tokens are never held back) unless it is a small answer of known length,
// which is read whole and written in one go (upstream.go: the exchange on
// the HostClient's pooled connections decides per answer, where fasthttp's
// HostClient.Do decides for the client as a whole); a refused connection
// marks the replica down and the request is retried elsewhere; a pooled
// connection the replica closed before answering is retried once; hop-by-hop
// headers, and those a Connection header names, are dropped both ways; the whole-request timeout is the
// connection's deadline; drain closes the listener and lets in-flight
// streams finish. A client that stops reading a stream loses it after
// --stream-write-timeout (a deadline per write, not per response, so long
// streams to clients that read are never cut), and the replica connection
// it held goes with it.
// fasthttp is a dependency already (the simulator's front end), so this
// adds a second home for it, not a second HTTP stack to the module graph;
// probes, queue scrapes and /tokenize calls stay on net/http (off the hot
// path, where its timeouts and context handling are worth more).
//
// It imports the standard library, fasthttp (the proxy), runtime/jsoncursor (the prompt peek),
// runtime/kvblock (the KV block hash the replicas' events name),
// client_golang and github.com/go-zeromq/zmq4 (its second home, next to the simulator's
// kvcache: the precise-prefix profile subscribes to the replicas' KV events
// over ZMQ, the other end of the simulator's publisher, and there is no
// runtime package for ZMQ because only these two functions speak it).
// Nothing outside functions/inferencerouter imports it except its cmd and
// tests/.
package inferencerouter
