// Package promtargets writes Prometheus file-based service discovery files: one JSON file per
// group of serving endpoints (the local stack's simulator, each deployment the deployer's
// local provider starts) in a directory a Prometheus watches (file_sd_configs). Each target is
// a host:port, which Prometheus uses as its `instance` label; that is how the benchmark runner
// finds an endpoint's series. Files are replaced atomically, so Prometheus never reads half of one.
//
// It imports only the standard library.
package promtargets
