// Package fn is the contract every Lensfn function is built on and the runtime that serves it on
// Knative or in the local stack.
//
// Main reads the environment once (LoadConfig: the platform contract in Config), then runs the
// function's Builder, which reads the function's own settings struct from the same environment
// through the one reader, Config.ReadSettings (github.com/caarlos0/env, as Knative's sharedmain
// reads its settings with envconfig); a bad value stops the function at start. The
// runtime owns everything the Knative runtime contract asks of a container: listening on PORT,
// kubelet and K-Network-Probe probes through knative's Drainer, /healthz and /readyz, /metrics on
// a private Prometheus registry (requests and latency per route, events in and out, store
// operations), structured logging as Knative's config-logging configures it (K_LOGGING_CONFIG,
// zap with Stackdriver-style fields), the CloudEvents receiver at
// /events with deduplication, and a graceful drain on SIGTERM that finishes in-flight work.
//
// A Builder only wires: background loops (queue sweeps, janitors) go in Function.Start, which
// the runtime runs once the server listens, cancels when the drain begins and waits for before
// Function.Close, so no loop runs before the function can be probed or after its store closed.
//
// It builds each function's mux from its route table (Route) and owns what the table implies:
// bearer tokens by scope (runtime/auth, LENS_AUTH), Host and Origin checks, JSON Content-Type,
// body limits and JSON depth, 404 and 405 as problem+json. It hands every function the
// operator's endpoint policy (runtime/egress) and the one loader of the sealing key (Sealer).
//
// It may import runtime/problem, runtime/cloudevent, runtime/state,
// runtime/state/redisstore, runtime/auth, runtime/egress and runtime/secret, and the
// third-party packages knative.dev/pkg (signals, network only), zap, zapdriver,
// prometheus/client_golang and caarlos0/env.
package fn
