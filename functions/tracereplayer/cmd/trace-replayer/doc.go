// Command trace-replayer runs the trace-replayer stage as a Knative function (see
// functions/tracereplayer).
//
// It imports functions/tracereplayer and runtime/fn only.
package main
