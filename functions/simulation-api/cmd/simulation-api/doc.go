// Command simulation-api serves /api/simulation as a Knative function (see functions/simulation-api).
//
// It imports functions/simulation-api and runtime/fn only.
package main
