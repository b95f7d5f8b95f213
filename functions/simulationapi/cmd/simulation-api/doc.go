// Command simulation-api serves /api/simulation as a Knative function (see functions/simulationapi).
//
// It imports functions/simulationapi and runtime/fn only.
package main
