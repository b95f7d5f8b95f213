// Command workflow-orchestrator runs the workflow-orchestrator stage as a Knative function (see
// functions/workflow-orchestrator).
//
// It imports functions/workflow-orchestrator and runtime/fn only.
package main
