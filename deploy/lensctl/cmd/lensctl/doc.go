// Command lensctl is the Lensfn command-line client (package deploy/lensctl): datasets and
// simulation tasks from a terminal or a script, with exit codes by outcome.
//
// It imports deploy/lensctl only.
package main
