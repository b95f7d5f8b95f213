// Package local is the local stack: one command starts, on loopback, everything the Knative
// deployment would run, so the manifests in deploy/knative are exercised rather than just written.
//
//   - Redis: a redis-server found on PATH, with append-only persistence in the data dir so a
//     restart keeps everything, supervised like the functions; else the embedded Redis-compatible
//     server, with a warning that its data lives only as long as the stack.
//   - Prometheus (Options.StartPrometheus; make run sets it): Debian's prometheus when it is on
//     PATH, on a free loopback port, supervised like redis-server, discovering its targets from
//     files in <data dir>/prometheus/targets (the simulator's written here, the deployer's local
//     deployments and the benchmark runner's runs written by them); its URL goes to the benchmark
//     runner as LENS_PROMETHEUS_URL. Without it nothing changes.
//   - A broker that routes CloudEvents by the Trigger objects in deploy/knative (filters on type,
//     source and extension attributes as Knative does), retries with exponential backoff per the
//     Broker's delivery spec and appends what it gives up on to a dead-letter log.
//   - Every Knative Service in deploy/knative as its own process with PORT, K_SINK, REDIS_URL and
//     the manifest's environment, health-checked on its readiness probe before the stack reports
//     ready, and restarted with backoff when it exits.
//   - An ingress on one address that routes by the lensfn.dev/path-prefix annotation.
//   - ModuleBuild: the background build of the WASM modules the modules' manifest lists as
//     pending (make run defers the Baseten parser), wasm-modules/build.sh --only in its own
//     process group, logged to a file and stopped with the stack.
//
// Every child gets SIGTERM as its parent-death signal, so nothing outlives the stack, and the
// stack holds its data dir with a flock so a second stack cannot share it.
//
// It may import runtime/auth (API tokens), runtime/state/redisstore (for the embedded server), runtime/secret (the
// stack's sealing key), runtime/fn (for the readiness lines that name start-up work still in
// progress: the functions compile their WASM modules in the background and the stack does not
// wait for them), runtime/promtargets (the discovery files) and the YAML decoder; it starts
// function binaries built by
// `make build` and never imports a function.
package local
