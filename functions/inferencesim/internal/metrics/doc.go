// Package metrics is one simulator rank's vLLM Prometheus metric set on a private registry
// (names, labels and buckets as vLLM exposes them), the per-model series resolved once so
// the hot path hashes no labels, the bounded lora_requests_info series, and the
// --fake-metrics document that replaces the real series while it is set.
//
// It may import the standard library and prometheus/client_golang.
package metrics
