// Command deployer runs the deployer stage as a Knative function (see functions/deployer).
package main
