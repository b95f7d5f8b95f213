package evalrun

import (
	"context"
	"encoding/json"
	"strconv"
)

// Progress stream entries: every stored change of a run (status, phase, progress, live metrics)
// and every log line is appended to the run's progress stream in the state store, which
// evaluation-api streams to watchers as Server-Sent Events (GET /runs/{id}/events).
const (
	EntryStatus = "status" // fields: status, phase, progress_percent, progress_message, live_metrics (JSON)
	EntryLog    = "log"    // fields: line
)

// appendStatus records run's status and progress on its stream. The stream is a view for
// watchers: a failed append must not undo a write already stored, and a watcher that missed it
// still reads the record's status when the stream ends.
func (r *Repo) appendStatus(ctx context.Context, run *Run) {
	fields := map[string]string{"type": EntryStatus, "status": run.Status, "phase": Str(run.Phase),
		"progress_message": Str(run.ProgressMessage)}
	if run.ProgressPercent != nil {
		fields["progress_percent"] = strconv.FormatFloat(*run.ProgressPercent, 'f', -1, 64)
	}
	if run.LiveMetrics != nil {
		if live, err := marshal(run.LiveMetrics); err == nil {
			fields["live_metrics"] = string(live)
		}
	}
	_, _ = r.Store.AppendProgress(ctx, Kind, run.ID, fields)
}

// DecodeEntry turns an entry of a run's progress stream into an event type and its data:
// "log" {line} or "status" {status, phase, progress_percent, progress_message, live_metrics}.
func DecodeEntry(f map[string]string) (string, any) {
	switch f["type"] {
	case EntryLog:
		return "log", map[string]any{"line": f["line"]}
	case EntryStatus:
		data := map[string]any{"status": f["status"], "progress_message": f["progress_message"]}
		if f["phase"] != "" {
			data["phase"] = f["phase"]
		}
		if pct, err := strconv.ParseFloat(f["progress_percent"], 64); err == nil {
			data["progress_percent"] = pct
		}
		if s := f["live_metrics"]; s != "" && json.Valid([]byte(s)) {
			data["live_metrics"] = json.RawMessage(s)
		}
		return "status", data
	}
	return "message", f
}
