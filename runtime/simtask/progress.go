package simtask

import (
	"context"
	"encoding/json"
	"strconv"
)

// Progress stream entries: every status, progress or live-summary change and every log line
// is appended to the task's progress stream in the state store, which the API streams to
// watchers as Server-Sent Events (GET .../tasks/{id}/events).
const (
	EntryStatus = "status" // fields: status, progress_percent, progress_message, live_summary (JSON)
	EntryLog    = "log"    // fields: line
)

// Terminal reports whether a stored status is final.
func Terminal(status string) bool {
	return status == StatusCompleted || status == StatusFailed || status == StatusCancelled
}

// appendStatus records t's status and progress on its stream. The stream is a view for
// watchers: a failed append must not undo a transition already stored, and a watcher that
// missed it still sees the record's status when the stream ends.
func (r *Repo) appendStatus(ctx context.Context, t *Task) {
	fields := map[string]string{"type": EntryStatus, "status": t.Status,
		"progress_percent": strconv.FormatFloat(t.ProgressPercent, 'f', -1, 64),
		"progress_message": t.ProgressMessage}
	if t.LiveSummary != nil {
		if b, err := json.Marshal(t.LiveSummary); err == nil {
			fields["live_summary"] = string(b)
		}
	}
	_, _ = r.Store.AppendProgress(ctx, Kind, t.ID, fields)
}
