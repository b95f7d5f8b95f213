// Package architecture checks the import rules of ARCHITECTURE.md: the layers import in one
// direction (the top-level trees, and inside runtime/ its named layers: records above platform
// and engine, above the leaf libraries), every third-party dependency has one home, and
// function binaries stay free of the heavy Kubernetes and OpenCensus packages.
package architecture
