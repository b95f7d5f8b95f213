// Command workflow-orchestrator runs the workflow-orchestrator stage as a Knative function (see
// functions/workfloworchestrator).
//
// It imports functions/workfloworchestrator and runtime/fn only.
package main
