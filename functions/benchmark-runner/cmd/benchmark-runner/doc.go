// Command benchmark-runner runs queued benchmark runs as a Knative function (see functions/benchmark-runner).
//
// It imports functions/benchmark-runner and runtime/fn only.
package main
