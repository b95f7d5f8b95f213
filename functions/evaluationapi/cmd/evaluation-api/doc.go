// Command evaluation-api serves /api/v1/evaluate as a Knative function (see functions/evaluationapi).
//
// It imports functions/evaluationapi and runtime/fn only.
package main
