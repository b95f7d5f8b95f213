package evaluationapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/sse"
	"github.com/lensfn/lensfn/runtime/state"
)

// maxWatchers bounds the event streams one instance holds open; more get 429.
const maxWatchers = 128

// runEvents streams a run's status, phase, progress, live metrics and log lines as Server-Sent
// Events, resuming after Last-Event-ID and ending with an "end" event once the run is final.
func (a *API) runEvents(w http.ResponseWriter, r *http.Request) error {
	run, err := a.load(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	id := run.ID()
	src := &sse.ProgressSource{Store: a.deps.Store, Kind: evalrun.Kind, ID: id, Decode: evalrun.DecodeEntry,
		Finished: func(ctx context.Context) (sse.Event, bool, error) {
			cur, err := a.runs.Load(ctx, id)
			if errors.Is(err, state.ErrNotFound) {
				return sse.Event{Type: "end", Data: map[string]any{"status": "deleted"}}, true, nil
			}
			if err != nil || !evalrun.Terminal(cur.Status()) {
				return sse.Event{}, false, err
			}
			return sse.Event{Type: "end", Data: endData(cur)}, true, nil
		}}
	return sse.ServeProgress(w, r, a.watchers, a.streamLimits, src, "the run")
}

// endData is the closing event: the final status, its error and the SLA verdict, so a watcher
// (lensctl eval runs watch) can say how the run ended without another read.
func endData(run *evalrun.Run) map[string]any {
	data := map[string]any{"status": run.Status(), "progress_message": run.String("progress_message")}
	for _, key := range []string{"progress_percent", "error", "sla"} {
		if raw := run.Raw(key); raw != nil {
			data[key] = raw
		}
	}
	return data
}
