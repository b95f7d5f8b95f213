package workflow

import (
	"slices"

	"github.com/lensfn/lensfn/runtime/state"
)

// Workflow statuses (reference/lens-evaluation.md §3).
const (
	StatusQueued       = "queued"
	StatusDeploying    = "deploying"
	StatusRunning      = "running"
	StatusBenchmarking = "benchmarking"
	StatusCancelling   = "cancelling"
	StatusSucceeded    = "succeeded"
	StatusFailed       = "failed"
	StatusCancelled    = "cancelled"
)

// Statuses lists every workflow status in lifecycle order.
var Statuses = []string{StatusQueued, StatusDeploying, StatusRunning, StatusBenchmarking, StatusCancelling,
	StatusSucceeded, StatusFailed, StatusCancelled}

// ActiveStatuses are the workflow statuses with work ahead (what the orchestrator sweeps).
var ActiveStatuses = []string{StatusQueued, StatusDeploying, StatusRunning, StatusBenchmarking, StatusCancelling}

var workflowTransitions = map[string][]string{
	StatusQueued:       {StatusDeploying, StatusRunning, StatusCancelling, StatusFailed},
	StatusDeploying:    {StatusBenchmarking, StatusCancelling, StatusFailed},
	StatusRunning:      {StatusSucceeded, StatusCancelling, StatusCancelled, StatusFailed},
	StatusBenchmarking: {StatusSucceeded, StatusCancelling, StatusCancelled, StatusFailed},
	StatusCancelling:   {StatusCancelled, StatusFailed},
	StatusFailed:       {StatusQueued},
	StatusCancelled:    {StatusQueued},
}

// CanTransition reports whether a workflow may move from one status to another (a
// self-transition is always allowed).
func CanTransition(from, to string) bool {
	return from == to || slices.Contains(workflowTransitions[from], to)
}

// Terminal reports whether a workflow status is terminal for polling and deletion
// (TERMINAL_EVALUATION_STATUSES). failed and cancelled still have the retry edge.
func Terminal(status string) bool {
	return status == StatusSucceeded || status == StatusFailed || status == StatusCancelled
}

// NoWayOut reports whether a workflow status has no outgoing edge at all (is_terminal).
func NoWayOut(status string) bool { return len(workflowTransitions[status]) == 0 }

// Sources returns the workflow statuses from which to is reachable (for state.Transition).
func Sources(to string) []string { return state.SourcesOf(Statuses, CanTransition, to) }

// Case statuses: the case enum, plus cancelling, which cases carry during cleanup.
const (
	CaseQueued       = "queued"
	CaseDeploying    = "deploying"
	CaseBenchmarking = "benchmarking"
	CaseSucceeded    = "succeeded"
	CaseFailed       = "failed"
	CaseCancelled    = "cancelled"
	CaseCancelling   = "cancelling"
)

// CaseStatuses lists every case status (cancelling included) in lifecycle order.
var CaseStatuses = []string{CaseQueued, CaseDeploying, CaseBenchmarking, CaseCancelling, CaseSucceeded, CaseFailed, CaseCancelled}

var caseTransitions = map[string][]string{
	CaseQueued:       {CaseDeploying, CaseBenchmarking, CaseFailed, CaseCancelled},
	CaseDeploying:    {CaseBenchmarking, CaseFailed, CaseCancelled},
	CaseBenchmarking: {CaseSucceeded, CaseFailed, CaseCancelled},
	CaseSucceeded:    {CaseQueued},
	CaseFailed:       {CaseQueued, CaseBenchmarking},
	CaseCancelled:    {CaseQueued},
}

// CaseCanTransition reports whether a case may move between statuses. cancelling is outside the
// enum: any non-terminal case may enter it and it leaves only to cancelled or failed.
func CaseCanTransition(from, to string) bool {
	switch {
	case from == to:
		return true
	case to == CaseCancelling:
		return !CaseTerminal(from)
	case from == CaseCancelling:
		return to == CaseCancelled || to == CaseFailed
	}
	return slices.Contains(caseTransitions[from], to)
}

// CaseTerminal reports whether a case has finished (succeeded, failed or cancelled).
func CaseTerminal(status string) bool {
	return status == CaseSucceeded || status == CaseFailed || status == CaseCancelled
}
