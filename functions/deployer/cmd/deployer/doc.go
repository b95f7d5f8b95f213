// Command deployer runs the deployer stage as a Knative function (see functions/deployer), with
// both providers: local and knative. It is the command of the Knative image (ko builds it from
// deploy/knative/deployer.yaml); the local stack runs cmd/deployer-local instead.
//
// It imports functions/deployer, functions/deployer/knative and runtime/fn only.
package main
