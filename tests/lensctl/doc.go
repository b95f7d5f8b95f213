// Package lensctl tests the lensctl command line against the real simulation-api served over
// HTTP: output formats, exit codes, watching through the event stream, reports, configuration
// sources, and that no token ever reaches the output.
//
// Like everything under tests/, it may import anything in the module.
package lensctl
