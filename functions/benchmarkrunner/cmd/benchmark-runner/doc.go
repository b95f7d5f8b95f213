// Command benchmark-runner runs queued benchmark runs as a Knative function (see functions/benchmarkrunner).
//
// It imports functions/benchmarkrunner and runtime/fn only.
package main
