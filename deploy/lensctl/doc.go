// Package lensctl is the command-line client of the Lensfn APIs: datasets (list, download,
// timeline), simulation tasks (create, list, get, watch, stop, rerun, delete, report), the
// catalogue (backends, scenarios, discover), benchmark runs (eval runs create, list, get, watch,
// cancel, delete, report), evaluation workflows (eval workflows list, get, details, watch,
// report, cancel, retry, delete), multi-configuration evaluations (eval evaluations create, list, get) and
// compare (two tasks or two runs side by side, or an evaluation's comparison report), with
// tables by default (numbers rounded for people, at most 100 columns or a narrower terminal's
// width, wide columns wrapped) and --output json|yaml (the API's full precision), progress while
// watching (from the task's, run's or workflow's Server-Sent Events stream: one line cut to the
// terminal's width and redrawn in place, or a line per update when stderr is no terminal) and
// while downloading, and exit codes scripts can branch on
// (ExitOK, ExitFailed, ExitUsage, ExitCancelled, ExitSLAMissed). The API URL and token come from
// flags, then LENS_API / LENS_TOKEN, then ~/.config/lensfn/config.yaml.
//
// It may import runtime/apiclient, runtime/livesummary (the live summary it prints), runtime/sse, runtime/simtask,
// and, for lensctl predict, which runs the engine model here on the benchmark runner's schedules, events,
// runtime/enginemodel, runtime/evalrun and runtime/predict. Cobra, go-pretty, progressbar,
// golang.org/x/term (the terminal's width) and yaml.v3 live here.
package lensctl
