// Package kubeconfigtest writes the kubeconfigs tests register clusters with: inline ones that
// runtime/kubeconfig accepts (a bearer token; a client certificate and the CA that issued it,
// made fresh with crypto/x509) and Refused, one kubeconfig for each thing the rule refuses.
//
// It imports the standard library and testing only.
package kubeconfigtest
