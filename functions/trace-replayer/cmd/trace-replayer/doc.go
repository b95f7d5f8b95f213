// Command trace-replayer runs the trace-replayer stage as a Knative function (see
// functions/trace-replayer).
//
// It imports functions/trace-replayer and runtime/fn only.
package main
