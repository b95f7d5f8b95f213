// Command result-analyzer runs the result-analyzer stage as a Knative function (see
// functions/result-analyzer).
//
// It imports functions/result-analyzer and runtime/fn only.
package main
