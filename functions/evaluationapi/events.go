package evaluationapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/lensfn/lensfn/runtime/comparison"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/rawjson"
	"github.com/lensfn/lensfn/runtime/sse"
	"github.com/lensfn/lensfn/runtime/state"
	"github.com/lensfn/lensfn/runtime/workflow"
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
	id := run.ID
	gate := newFinalGate(r)
	src := &sse.ProgressSource{Store: a.deps.Store, Kind: evalrun.Kind, ID: id, Decode: gate.decode(evalrun.DecodeEntry),
		Finished: func(ctx context.Context) (sse.Event, bool, error) {
			cur, err := a.runs.Load(ctx, id)
			if errors.Is(err, state.ErrNotFound) {
				return sse.Event{Type: "end", Data: map[string]any{"status": "deleted"}}, true, nil
			}
			if err != nil || !evalrun.Terminal(cur.Status) || !gate.sent(cur.Status) {
				return sse.Event{}, false, err
			}
			return sse.Event{Type: "end", Data: endData(cur)}, true, nil
		}}
	return sse.ServeProgress(w, r, a.watchers, a.streamLimits, src, "the run")
}

// endData is the closing event: the final status, its error and the SLA verdict, so a watcher
// (lensctl eval runs watch) can say how the run ended without another read.
func endData(run *evalrun.Run) map[string]any {
	data := map[string]any{"status": run.Status, "progress_message": evalrun.Str(run.ProgressMessage)}
	if run.ProgressPercent != nil {
		data["progress_percent"] = *run.ProgressPercent
	}
	if !run.Error.IsZero() {
		data["error"] = run.Error
	}
	if run.SLA != nil {
		data["sla"] = run.SLA
	}
	return data
}

// endGrace bounds how long a stream waits, once the record is terminal, for its final status
// entry (appended just after the record is written; a failed append must not hold the stream
// open for good).
const endGrace = 2 * time.Second

// finalGate holds a stream's end until it has sent the record's terminal status entry. Entries
// are appended after each write, so a stream that ended as soon as the record read terminal
// could close before the final status (and what was written with it) reached the watcher.
type finalGate struct {
	last          string    // the newest status entry the stream sent
	terminalSince time.Time // when the stream first found the record terminal
	resumed       bool      // the stream resumed after an event (maybe past the final status)
}

func newFinalGate(r *http.Request) *finalGate {
	return &finalGate{resumed: r.Header.Get("Last-Event-ID") != "" || r.URL.Query().Get("lastEventId") != ""}
}

// decode wraps a stream's decoder to remember the status entries it sends.
func (g *finalGate) decode(dec func(map[string]string) (string, any)) func(map[string]string) (string, any) {
	return func(f map[string]string) (string, any) {
		typ, data := dec(f)
		if typ == "status" {
			g.last = f["status"]
		}
		return typ, data
	}
}

// sent tells whether the stream may end at the terminal status: it sent that status, it was
// resumed and sent no status (so resumed past it), or endGrace passed.
func (g *finalGate) sent(status string) bool {
	if g.terminalSince.IsZero() {
		g.terminalSince = time.Now()
	}
	return g.last == status || (g.resumed && g.last == "") || time.Since(g.terminalSince) >= endGrace
}

// workflowEvents streams a workflow's status, each case's status and log lines as Server-Sent
// Events, resuming after Last-Event-ID and ending with an "end" event at a terminal status,
// after the terminal status entry (finalGate).
func (a *API) workflowEvents(w http.ResponseWriter, r *http.Request) error {
	wf, _, err := a.loadWorkflow(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	id := wf.ID
	gate := newFinalGate(r)
	src := &sse.ProgressSource{Store: a.deps.Store, Kind: workflow.Kind, ID: id, Decode: gate.decode(workflow.DecodeEntry),
		Finished: func(ctx context.Context) (sse.Event, bool, error) {
			cur, _, err := a.workflows.Get(ctx, id)
			if errors.Is(err, state.ErrNotFound) {
				return sse.Event{Type: "end", Data: map[string]any{"status": "deleted"}}, true, nil
			}
			if err != nil || !workflow.Terminal(cur.Status) || !gate.sent(cur.Status) {
				return sse.Event{}, false, err
			}
			return sse.Event{Type: "end", Data: workflowEndData(cur)}, true, nil
		}}
	return sse.ServeProgress(w, r, a.watchers, a.streamLimits, src, "the workflow")
}

// workflowEndData is the closing event: the final status, its errors, whether a report is
// ready and the SLA verdict over its comparisons (sla_met: false if any comparison missed its
// SLA, true if all that were checked met it, null without checks), so a watcher can say how the
// evaluation ended without another read.
func workflowEndData(wf *workflow.Workflow) map[string]any {
	data := map[string]any{"status": wf.Status, "report_ready": hasReport(wf), "sla_met": nil}
	for key, v := range map[string]rawjson.Opt[string]{"error": wf.Error, "cancellation_error": wf.CancellationError, "finished_at": wf.FinishedAt} {
		if v.Present() {
			data[key] = v
		}
	}
	var report comparison.Report
	if hasReport(wf) && workflow.Decode(wf.Report.Raw(), &report) {
		for _, c := range report.Comparisons {
			if c.SLA == nil || c.SLA.Met == nil {
				continue
			}
			if !*c.SLA.Met {
				data["sla_met"] = false
				break
			}
			data["sla_met"] = true
		}
	}
	return data
}
