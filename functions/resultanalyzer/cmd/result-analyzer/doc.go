// Command result-analyzer runs the result-analyzer stage as a Knative function (see
// functions/resultanalyzer).
//
// It imports functions/resultanalyzer and runtime/fn only.
package main
