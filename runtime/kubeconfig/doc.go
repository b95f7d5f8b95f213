// Package kubeconfig owns the rule for the kubeconfig a kubernetes cluster is registered with:
// only inline credentials. A kubeconfig is otherwise a small program for whoever reads it: an
// exec credential plugin runs a command (in the deployer, whose environment holds
// LENS_SECRET_KEY), an auth-provider runs plugin code, and tokenFile, client-certificate,
// client-key and certificate-authority read files of the machine that reads it (the deployer's
// own service-account token among them) and send them to the kubeconfig's server, as proxy-url
// sends everything through a host of its choosing. Parse accepts a kubeconfig only when every
// entry in it is inline data (a server URL, base64 certificate data, a bearer token) and its
// current context resolves, and returns that context's Credentials, the only thing a client is
// built from. inventory-api refuses any other kubeconfig when a cluster is registered, and the
// deployer's knative provider checks it again before it talks to the cluster.
//
// Its errors name the refused field (users["ci"].user.exec) and never quote the kubeconfig.
//
// It imports the standard library and sigs.k8s.io/yaml (the YAML-to-JSON conversion client-go's
// own kubeconfig loader uses, so both read the same document).
package kubeconfig
