// Package lensctl tests the lensctl command line against the real simulation-api and
// evaluation-api served over HTTP behind one URL (sharing one store, as the local stack does):
// output formats, exit codes (by a task's or run's outcome and SLA), watching through the event
// streams, reports, compare, the catalogue commands, configuration sources, and that no token
// ever reaches the output; and, through the built binary in 80-, 100- and 160-column
// pseudo-terminals (creack/pty), that a watch's progress is one line redrawn within the width. The workflow routes are answered by a stand-in until the
// orchestrator's land in evaluation-api.
//
// Like everything under tests/, it may import anything in the module.
package lensctl
