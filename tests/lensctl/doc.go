// Package lensctl tests the lensctl command line against the real simulation-api and
// evaluation-api served over HTTP behind one URL (sharing one store, as the local stack does):
// output formats, exit codes (by a task's or run's outcome and SLA), watching through the event
// streams, reports, compare, the catalogue commands, configuration sources, and that no token
// ever reaches the output. The workflow routes are answered by a stand-in until the
// orchestrator's land in evaluation-api.
//
// Like everything under tests/, it may import anything in the module.
package lensctl
