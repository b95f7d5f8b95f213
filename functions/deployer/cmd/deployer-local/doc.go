// Command deployer-local is the local stack's deployer (see functions/deployer): the local
// provider only. `make build` builds it and deploy/local runs it for the deployer Service, since a
// local stack deploys on local cluster sessions only; it links none of the knative provider's
// Kubernetes and Knative Serving packages (about 110 packages, #11), and a deployment on a
// kubernetes cluster session fails saying it needs cmd/deployer, the Knative image's build.
//
// It imports functions/deployer and runtime/fn only.
package main
