// Command lensfn-local runs the local stack (`make run`): Redis, the broker, every function of
// deploy/knative as its own process, and one ingress address; once it serves, it builds the WASM
// modules the manifest lists as pending (make run defers the Baseten parser) in the background
// and prints their progress. Ctrl-C stops that build and drains everything.
//
// It imports deploy/local, runtime/state and runtime/auth (its token subcommand).
package main
