// Command result-analyzer runs the result-analyzer stage as a Knative function (see
// functions/result-analyzer).
package main
