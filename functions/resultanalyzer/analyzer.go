package resultanalyzer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/analysis"
	"github.com/lensfn/lensfn/runtime/cloudevent"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/report/simreport"
	"github.com/lensfn/lensfn/runtime/simtask"
	"github.com/lensfn/lensfn/runtime/state"
)

// Name is the function's Knative Service name.
const Name = "result-analyzer"

// Consumes lists the event types the function receives at /events.
var Consumes = []string{events.TypeTaskReplayed}

const (
	// SummaryFile is the summary artifact written in the task folder.
	SummaryFile = "summary.json"
	// MaxInlineRecords bounds result.per_request; the artifact holds every record.
	MaxInlineRecords = 1000
	sweepInterval    = 5 * time.Second
)

// Settings are the analyzer's own, read from the environment at start (fn.Config.ReadSettings).
type Settings struct {
	// LeaseTTL is how long a task's analysis lease lives unless renewed (LENS_LEASE_TTL).
	LeaseTTL time.Duration `env:"LENS_LEASE_TTL" envDefault:"15s"`
}

// Validate refuses a zero lease.
func (s *Settings) Validate() error {
	if s.LeaseTTL == 0 {
		return errors.New("LENS_LEASE_TTL must be a positive duration")
	}
	return nil
}

// Analyzer finishes replayed tasks.
type Analyzer struct {
	deps     fn.Deps
	settings Settings
	tasks    *simtask.Repo
	analyzed *prometheus.CounterVec
}

// Build is the function's fn.Builder.
func Build(_ context.Context, d fn.Deps) (*fn.Function, error) {
	var s Settings
	if err := d.Config.ReadSettings(&s); err != nil {
		return nil, err
	}
	// The analyzer never opens endpoint keys, so it gets no sealing key.
	a := New(d, &simtask.Repo{Store: d.Store, DataDir: d.Config.DataDir}, s)
	return &fn.Function{Events: map[string]cloudevent.Handler{Consumes[0]: a.onReplayed}, Start: a.Sweep}, nil
}

// New builds an analyzer; its Sweep runs in the function's Start hook. A zero LeaseTTL is 15s.
func New(d fn.Deps, tasks *simtask.Repo, s Settings) *Analyzer {
	a := &Analyzer{deps: d, tasks: tasks, settings: s,
		analyzed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lens_analyzer_tasks_total",
			Help: "Simulation tasks analysed, by final status."}, []string{"status"})}
	d.Metrics.Registry.MustRegister(a.analyzed)
	return a
}

func (a *Analyzer) onReplayed(ctx context.Context, e cloudevent.Event) error {
	var p events.TaskReplayed
	if err := e.DecodeData(&p); err != nil {
		return err
	}
	err := a.Analyze(ctx, p.TaskID)
	if errors.Is(err, state.ErrLeaseHeld) {
		// another delivery or the sweep is on it: let the broker retry later
		return problem.Wrap(problem.CodeTooManyRequest, err, "another worker is analysing the task")
	}
	return err
}

// Analyze finishes one task if it waits for analysis; anything else is a no-op (late or
// duplicated events).
func (a *Analyzer) Analyze(ctx context.Context, id string) error {
	t, err := a.tasks.Get(ctx, id)
	if errors.Is(err, state.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if t.Status != simtask.StatusRunning || t.Internal.Phase != "analyzing" {
		return nil
	}
	// The lease lives LENS_LEASE_TTL and is renewed while the analysis runs, so the lease of an
	// analyzer that died mid-event frees within one TTL: the broker's redelivery to the restarted
	// analyzer then takes it, instead of being answered 429 until it is dead-lettered while the
	// sweep completes the task later.
	ttl := a.settings.LeaseTTL
	if ttl <= 0 {
		ttl = 15 * time.Second
	}
	acquired, err := a.deps.Store.AcquireLease(ctx, simtask.LeaseName(id), a.deps.Config.InstanceID, ttl)
	if err != nil {
		return err
	}
	lease := state.NewHeldLease(acquired)
	keepCtx, stopKeep := context.WithCancel(ctx)
	kept := make(chan struct{})
	go func() {
		defer close(kept)
		lease.Keep(keepCtx, a.deps.Store, ttl, func() {}) // a lost lease fails the fenced writes below
	}()
	defer func() {
		stopKeep()
		<-kept // Keep is the lease's only writer until it has stopped
		_ = a.deps.Store.ReleaseLease(context.WithoutCancel(ctx), lease.Lease())
	}()
	summary, inline, err := summarise(t)
	outcome := outcomeOf(t.Internal)
	if err != nil {
		msg := "the per-request records could not be analysed: " + err.Error()
		_, terr := a.tasks.Transition(ctx, id, []string{simtask.StatusRunning}, simtask.StatusFailed, lease.Fence(), func(t *simtask.Task) error {
			t.ErrorMessage, t.CompletedAt, t.ProgressMessage, t.LiveSummary = &msg, simtask.Now(), "Simulation failed", nil
			t.Internal.Phase = ""
			return nil
		})
		a.tasks.Logf(ctx, id, "Failed: %s", msg)
		return terr
	}
	summaryPath := filepath.Join(t.TaskDir, SummaryFile)
	if err := writeJSON(summaryPath, summary); err != nil {
		return err
	}
	raw, err := json.Marshal(summary)
	if err != nil {
		return err
	}
	version := "0.1.0"
	if t.BackendVersion != nil {
		version = *t.BackendVersion
	}
	result := &simtask.Result{RunID: t.Simulation.Backend + "-" + id, Backend: t.Simulation.Backend, BackendVersion: version,
		Summary: raw, PerRequest: inline, BackendMetrics: map[string]any{}, Warnings: []string{},
		Artifacts: []simtask.Artifact{
			{URI: "artifact://simulation/" + id + "/" + SummaryFile, Kind: "summary-json", Path: summaryPath, MediaType: "application/json"},
			{URI: "artifact://simulation/" + id + "/per-request.jsonl", Kind: "per-request-jsonl", Path: t.Internal.RecordsPath, MediaType: "application/x-ndjson"},
		}}
	if c := t.Internal.Replay; c != nil {
		if warning := c.Warning(t.Simulation.DurationSeconds); warning != "" {
			result.Warnings = append(result.Warnings, warning)
		}
	}
	result.Warnings = append(result.Warnings, analysis.Warnings(summary)...)
	if len(inline) == MaxInlineRecords {
		result.Warnings = append(result.Warnings, fmt.Sprintf("per_request shows the first %d requests; the per-request-jsonl artifact has all of them", MaxInlineRecords))
	}
	final := outcome.status
	// The report is presentation: a task whose report cannot be written still completes, and
	// the API writes the report on demand later.
	finished := *t
	finished.Result, finished.Status = result, final
	if arts, err := simreport.Write(&finished, time.Now()); err != nil {
		a.deps.Log.Warnw("could not write the task's report", "task", id, "error", err)
	} else {
		result.Artifacts = append(result.Artifacts, arts...)
	}
	_, err = a.tasks.Transition(ctx, id, []string{simtask.StatusRunning}, final, lease.Fence(), func(t *simtask.Task) error {
		t.Result, t.CompletedAt, t.ProgressPercent, t.ProgressMessage = result, simtask.Now(), progressOf(t, final, summary), outcome.message
		uri := "artifact://simulation/" + id
		t.ArtifactURI, t.LiveSummary, t.Internal.Phase = &uri, nil, ""
		if final == simtask.StatusFailed {
			msg := t.Internal.ReplayMessage
			t.ErrorMessage = &msg
		}
		return nil
	})
	if err != nil {
		return err
	}
	a.analyzed.WithLabelValues(final).Inc()
	a.tasks.Logf(ctx, id, "%s", outcome.message)
	return nil
}

// progressOf is a finished task's progress: 100 once it completed; for a stopped or failed run
// the share of the scheduled requests it sent, so a run stopped after 38 of 162 says 23.5.
func progressOf(t *simtask.Task, status string, s analysis.Summary) float64 {
	if status == simtask.StatusCompleted {
		return 100
	}
	scheduled := int64(0)
	if c := t.Internal.Replay; c != nil {
		scheduled = c.Scheduled
	} else if s.ScheduledRequests != nil {
		scheduled = *s.ScheduledRequests
	} else if n, ok := t.LiveSummary["scheduled_requests"].(float64); ok {
		// A replayer that died wrote no count of its own; its last live summary has the total.
		scheduled = int64(n)
	}
	if scheduled <= 0 {
		return t.ProgressPercent // what the replay last reported
	}
	return math.Round(min(100, 100*float64(s.SentRequests)/float64(scheduled))*10) / 10
}

type outcome struct{ status, message string }

// outcomeOf maps the replay's end to the task's final status: the outcome the replay recorded,
// or for records written before it did, its message.
func outcomeOf(in simtask.Internal) outcome {
	switch in.ReplayOutcome {
	case simtask.StatusCompleted:
		return outcome{simtask.StatusCompleted, "Simulation completed"}
	case simtask.StatusCancelled:
		return outcome{simtask.StatusCancelled, "Simulation cancelled"}
	case simtask.StatusFailed:
		return outcome{simtask.StatusFailed, "Simulation failed"}
	}
	switch in.ReplayMessage {
	case "stopped by request":
		return outcome{simtask.StatusCancelled, "Simulation cancelled"}
	case "", "every scheduled request was sent":
		return outcome{simtask.StatusCompleted, "Simulation completed"}
	}
	return outcome{simtask.StatusFailed, "Simulation failed"}
}

// summarise streams the records through the accumulator, keeping the first few inline.
func summarise(t *simtask.Task) (analysis.Summary, []json.RawMessage, error) {
	f, err := os.Open(t.Internal.RecordsPath)
	if err != nil {
		return analysis.Summary{}, nil, err
	}
	defer f.Close()
	slo, err := analysis.SLOFromBackendOptions(t.Simulation.BackendOptions)
	if err != nil {
		slo = nil // presentation only: a malformed SLO does not fail the run
	}
	// A stopped run is measured over what it did; a finished one spans its configured duration.
	duration := t.Simulation.DurationSeconds
	if outcomeOf(t.Internal).status != simtask.StatusCompleted {
		duration = 0
	}
	opts := analysis.Options{DurationSeconds: duration, SLO: slo}
	if c := t.Internal.Replay; c != nil {
		scheduled := c.Scheduled
		opts.ScheduledRequests, opts.NotReleased = &scheduled, c.NotSent
	}
	acc, err := analysis.New(opts)
	if err != nil {
		return analysis.Summary{}, nil, err
	}
	// A runner that crashed may have left half a line at the end: only complete lines count.
	complete, err := completeLength(f)
	if err != nil {
		return analysis.Summary{}, nil, err
	}
	var inline []json.RawMessage
	// Records are read without their metadata (the expensive part); inline rows keep it, verbatim.
	err = analysis.ReadRecordLines(bufio.NewReaderSize(io.NewSectionReader(f, 0, complete), 1<<16), func(line []byte, rec loadgen.Record) error {
		if len(inline) < MaxInlineRecords {
			inline = append(inline, json.RawMessage(bytes.Clone(line)))
		}
		return acc.Add(rec)
	})
	if err != nil {
		return analysis.Summary{}, nil, err
	}
	s, err := acc.Summary()
	return s, inline, err
}

// completeLength is the length of f up to and including its last newline.
func completeLength(f *os.File) (int64, error) {
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 64<<10)
	for end := info.Size(); end > 0; {
		start := max(0, end-int64(len(buf)))
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

func writeJSON(path string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(raw, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Sweep analyses, until ctx ends, replayed tasks whose event never arrived.
func (a *Analyzer) Sweep(ctx context.Context) {
	tick := time.NewTicker(sweepInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		page, err := a.deps.Store.List(ctx, state.Query{Kind: simtask.Kind, Status: []string{simtask.StatusRunning}, Limit: 500})
		if err != nil {
			continue
		}
		for _, rec := range page.Records {
			t, err := simtask.Unmarshal(rec.Doc)
			if err != nil || t.Internal.Phase != "analyzing" {
				continue
			}
			if err := a.Analyze(ctx, rec.ID); err != nil && !errors.Is(err, state.ErrLeaseHeld) && !errors.Is(err, state.ErrUnavailable) {
				a.deps.Log.Warnw("sweep could not analyse a task", "task", rec.ID, "error", err)
			}
		}
	}
}
