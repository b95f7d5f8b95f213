// Package tour runs the README's two tours ("The simulation tour" and "The evaluation tour"),
// each extracted literally from README.md, in bash against bin/lensfn-local started as `make run`
// starts it (the same binaries, built once, a temporary data dir for each tour, a dataset mirror
// that refuses connections so nothing can need the internet), so the document cannot drift from
// what the stack does. It needs bash, curl and jq (.ci/run installs them).
//
// Like everything under tests/, it may import anything in the module.
package tour
