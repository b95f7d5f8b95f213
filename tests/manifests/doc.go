// Package manifests checks deploy/knative: every function has a Knative Service and kn commands,
// every event type a function consumes has a Trigger that routes it there, and every Trigger
// names a function and a catalogued event type.
//
// Like everything under tests/, it may import anything in the module.
package manifests
