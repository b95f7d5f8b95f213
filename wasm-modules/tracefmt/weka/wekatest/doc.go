// Package wekatest generates WEKA agent traces for tests: parent sessions whose turns spawn
// several subagents, a turn that joins them, and background subagents nobody joins, with every
// recorded time known to the test, so replays can be checked against the recording without
// copying real traces. It imports only the standard library.
package wekatest
