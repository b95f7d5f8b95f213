// Package tests holds the cross-function tests: architecture rules (architecture/), Knative
// manifests (manifests/), plugin conformance (conformance/), end-to-end pipelines over real
// processes (e2e/) and benchmarks (bench/). It may import anything in the module.
package tests
