// Command trace-replayer runs the trace-replayer stage as a Knative function (see
// functions/trace-replayer).
package main
