// Package lensctl is the command-line client of the Lensfn APIs: datasets (list, download,
// timeline) and simulation tasks (create, list, get, watch, stop, rerun, delete, report), with
// tables by default and --output json|yaml, a progress bar while watching a task (from its
// Server-Sent Events stream) and while downloading, and exit codes scripts can branch on
// (ExitOK, ExitFailed, ExitCancelled, ExitUsage). The API URL and token come from flags, then
// LENS_API / LENS_TOKEN, then ~/.config/lensfn/config.yaml. Command groups are built so that the
// evaluation side (runs, workflows, evaluations) adds groups of the same shape.
//
// It may import runtime/sse and runtime/simtask; cobra, go-pretty, progressbar and yaml.v3 live here.
package lensctl
