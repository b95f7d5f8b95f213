// Command lensfn-local runs the local stack (`make run`): Redis, the broker, every function of
// deploy/knative as its own process, and one ingress address. Ctrl-C drains everything.
//
// It imports deploy/local, runtime/state and runtime/auth (its token subcommand).
package main
