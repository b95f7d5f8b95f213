// Command deployer runs the deployer stage as a Knative function (see functions/deployer).
//
// It imports functions/deployer and runtime/fn only.
package main
