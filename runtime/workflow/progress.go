package workflow

import (
	"context"
	"fmt"
)

// Progress stream entries: every stored status change of a workflow and of each of its cases is
// appended to the workflow's progress stream in the state store, with a log line saying what
// changed, which evaluation-api streams to watchers as Server-Sent Events
// (GET /workflow-runs/{id}/events).
const (
	EntryStatus = "status" // fields: status, error
	EntryCase   = "case"   // fields: case_id, status, error
	EntryLog    = "log"    // fields: line
)

// statuses is what a workflow's stream reports: its status and each case's (zero: not yet stored).
type statuses struct {
	workflow string
	cases    map[string]string
}

func statusesOf(w *Workflow) statuses {
	s := statuses{workflow: w.Status, cases: make(map[string]string, len(w.Cases))}
	for _, c := range w.AllCases() {
		s.cases[c.ID] = c.Status
	}
	return s
}

// appendChanges records on the stream what changed from before to after: each case whose status
// moved and the workflow's status, each with a log line. The stream is a view for watchers: a
// failed append must not undo a write already stored, and a watcher that missed it still reads
// the record's status when the stream ends.
func (r *Repo) appendChanges(ctx context.Context, before statuses, after *Workflow) {
	id := after.ID
	for _, c := range after.AllCases() {
		was := before.cases[c.ID]
		if was == c.Status {
			continue
		}
		if was == "" {
			r.logf(ctx, id, "case %s: %s", c.ID, c.Status)
		} else {
			r.logf(ctx, id, "case %s: %s -> %s", c.ID, was, c.Status)
		}
		r.append(ctx, id, map[string]string{"type": EntryCase, "case_id": c.ID, "status": c.Status, "error": c.Error.Get()})
	}
	// The workflow's status comes last, so a watcher that has read a terminal status has read
	// every case change written with it.
	if before.workflow != after.Status {
		if before.workflow == "" {
			r.logf(ctx, id, "workflow %s created: %s", id, after.Status)
		} else {
			r.logf(ctx, id, "workflow %s: %s -> %s", id, before.workflow, after.Status)
		}
		r.append(ctx, id, map[string]string{"type": EntryStatus, "status": after.Status, "error": after.Error.Get()})
	}
}

func (r *Repo) logf(ctx context.Context, id, format string, args ...any) {
	r.append(ctx, id, map[string]string{"type": EntryLog, "line": fmt.Sprintf(format, args...)})
}

func (r *Repo) append(ctx context.Context, id string, fields map[string]string) {
	_, _ = r.Store.AppendProgress(ctx, Kind, id, fields)
}

// DecodeEntry turns an entry of a workflow's progress stream into an event type and its data:
// "status" {status, error?}, "case" {case_id, status, error?} or "log" {line}.
func DecodeEntry(f map[string]string) (string, any) {
	switch f["type"] {
	case EntryLog:
		return "log", map[string]any{"line": f["line"]}
	case EntryStatus:
		data := map[string]any{"status": f["status"]}
		if f["error"] != "" {
			data["error"] = f["error"]
		}
		return "status", data
	case EntryCase:
		data := map[string]any{"case_id": f["case_id"], "status": f["status"]}
		if f["error"] != "" {
			data["error"] = f["error"]
		}
		return "case", data
	}
	return "message", f
}
