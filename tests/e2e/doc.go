// Package e2e drives the local stack as real processes over HTTP: functions built from source,
// Redis (redis-server when installed, else the embedded server), the Trigger-routing broker and
// the ingress, exactly as `make run` starts them.
package e2e
