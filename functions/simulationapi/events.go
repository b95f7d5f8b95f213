package simulationapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/lensfn/lensfn/runtime/simtask"
	"github.com/lensfn/lensfn/runtime/sse"
	"github.com/lensfn/lensfn/runtime/state"
)

// maxWatchers bounds the event streams one instance holds open; more get 429.
const maxWatchers = 128

// taskEvents streams a task's status, progress, live summary and log lines as Server-Sent
// Events, resuming after Last-Event-ID and ending with an "end" event once the task is final.
func (a *API) taskEvents(w http.ResponseWriter, r *http.Request) error {
	t, err := a.loadTask(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	src := &sse.ProgressSource{Store: a.deps.Store, Kind: simtask.Kind, ID: t.ID, Decode: decodeTaskEntry,
		Finished: func(ctx context.Context) (sse.Event, bool, error) {
			cur, err := a.tasks.Load(ctx, t.ID)
			if errors.Is(err, state.ErrNotFound) {
				return sse.Event{Type: "end", Data: map[string]any{"status": "deleted"}}, true, nil
			}
			if err != nil || !simtask.Terminal(cur.Status) {
				return sse.Event{}, false, err
			}
			return sse.Event{Type: "end", Data: map[string]any{"status": cur.Status, "progress_percent": cur.ProgressPercent,
				"progress_message": cur.ProgressMessage, "error_message": cur.ErrorMessage}}, true, nil
		}}
	return sse.ServeProgress(w, r, a.watchers, a.streamLimits, src, "the task")
}

// decodeTaskEntry turns a progress entry of simtask's stream into an event.
func decodeTaskEntry(f map[string]string) (string, any) {
	switch f["type"] {
	case simtask.EntryLog:
		return "log", map[string]any{"line": f["line"]}
	case simtask.EntryStatus:
		data := map[string]any{"status": f["status"], "progress_message": f["progress_message"]}
		if pct, err := strconv.ParseFloat(f["progress_percent"], 64); err == nil {
			data["progress_percent"] = pct
		}
		if s := f["live_summary"]; s != "" && json.Valid([]byte(s)) {
			data["live_summary"] = json.RawMessage(s)
		}
		return "status", data
	}
	return "message", f
}
