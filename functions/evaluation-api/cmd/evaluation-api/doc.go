// Command evaluation-api serves /api/v1/evaluate as a Knative function (see functions/evaluation-api).
//
// It imports functions/evaluation-api and runtime/fn only.
package main
