// Package e2e drives the local stack as real processes over HTTP: functions built from source,
// Redis (redis-server when installed, else the embedded server), the Trigger-routing broker and
// the ingress, exactly as `make run` starts them.
//
// Like everything under tests/, it may import anything in the module.
package e2e
