// Package architecture checks the import rules of ARCHITECTURE.md: the layers import in one
// direction, every third-party dependency has one home, and function binaries stay free of the
// heavy Kubernetes and OpenCensus packages.
package architecture
