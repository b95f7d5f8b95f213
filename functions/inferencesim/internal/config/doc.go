// Package config is the simulator's configuration: every flag of the specification (the
// latency ones from latency.DurationFlags), the YAML --config file (the command line wins),
// the environment defaults, validation, and SetFlag, the one parser of each flag that
// /admin/config shares with the command line.
//
// It may import functions/inferencesim/internal/limits, functions/inferencesim/internal/metrics
// (the fake-metrics document), wasm-modules/latency, runtime/enginemodel and wasm-modules/stepcost
// (the engine model's settings and their checks), the standard library and yaml.v3.
package config
