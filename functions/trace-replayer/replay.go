package tracereplayer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/runtime/simtask"
	"github.com/lensfn/lensfn/runtime/wasmhost"
)

// Version is the trace-replayer backend's version, written into task results.
const Version = "0.1.0"

// RecordsFile is the per-request artifact a replay writes in the task folder.
const RecordsFile = "per-request.jsonl"

// replayer turns a claimed task into requests on the recorded schedule.
type replayer struct {
	host *wasmhost.Host
}

// schedule parses the task's trace through its format's module, keeping the window and applying
// the scale factor, and converts each record into a load-engine request.
func (p *replayer) schedule(ctx context.Context, t *simtask.Task) ([]loadgen.Request, error) {
	parser, err := p.host.Parser(t.Prompt.Trace.Format)
	if err != nil {
		return nil, fmt.Errorf("no parser module for %s: %w", t.Prompt.Trace.Format, err)
	}
	tr := t.Prompt.Trace
	opts := wasmhost.ParseOptions{StartSeconds: tr.StartSeconds, EndSeconds: tr.EndSeconds, ScaleFactor: tr.SynthesisSpeedupRatio}
	if opts.EndSeconds == nil && parser.Info().Capabilities["supports_trace_range"] {
		// Without an end, the run's duration bounds the window: later records could never be
		// sent. (A format without ranges, such as WEKA, is bounded by the run's duration alone.)
		end := tr.StartSeconds + t.Simulation.DurationSeconds*max(tr.SynthesisSpeedupRatio, 1e-9)
		opts.EndSeconds = &end
	}
	var out []loadgen.Request
	var link *loadgen.SubagentLink // the last one made: a child session's turns share it
	_, err = parser.Parse(ctx, wasmhost.Source{Path: tr.Path}, opts, func(r *wasmhost.TraceRequest) error {
		req := loadgen.Request{SessionID: r.SessionID, Turn: r.TurnIndex, ArrivalMs: r.ArrivalMs, DelayMs: r.DelayMs,
			InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, HashIDs: r.HashIDs, BlockSize: r.BlockSize,
			Prompt: r.Prompt, Messages: r.Messages, Tools: r.Tools, Payload: r.Payload, Extra: r.Extra,
			ContextMode: loadgen.ContextMode(r.ContextMode),
			Metadata:    map[string]any{"recorded_ms": r.RecordedMs, "line": r.Line}}
		if s := r.Subagent; s != nil {
			want := loadgen.SubagentLink{ParentSessionID: s.ParentSessionID, SpawnAfterTurn: s.SpawnAfterTurn, JoinBeforeTurn: s.JoinBeforeTurn}
			if link == nil || *link != want {
				link = &want
			}
			req.Subagent = link
			req.Metadata["parent_session_id"] = s.ParentSessionID
			if s.AgentID != "" {
				req.Metadata["agent_id"] = s.AgentID
			}
			if s.AgentType != "" {
				req.Metadata["agent_type"] = s.AgentType
			}
		}
		if !tr.FixedSchedule && req.ArrivalMs != nil {
			zero := 0.0 // not on the recorded schedule: every session starts at once
			if req.Turn == 0 {
				req.ArrivalMs = &zero
			} else {
				req.ArrivalMs = nil
			}
		}
		if r.Source != "" && filepath.Base(r.Source) != filepath.Base(tr.Path) {
			req.Metadata["source"] = filepath.Base(r.Source)
		}
		out = append(out, req)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", filepath.Base(tr.Path), err)
	}
	if len(out) == 0 {
		return nil, errors.New("the selected trace window holds no requests")
	}
	return out, nil
}

// loadConfig maps the task's settings onto the load engine.
func loadConfig(t *simtask.Task, key string) (loadgen.Config, error) {
	api := loadgen.APIChat
	if t.Prompt.Trace.Format == "baseten_trace" {
		api = loadgen.APICompletions // Baseten replays literal completion prompts
	}
	opts := t.Simulation.BackendOptions
	if v, ok := opts["api"].(string); ok {
		switch loadgen.API(v) {
		case loadgen.APIChat, loadgen.APICompletions:
			api = loadgen.API(v)
		default:
			return loadgen.Config{}, fmt.Errorf("backend_options.api %q is not chat or completions", v)
		}
	}
	cfg := loadgen.Config{BaseURL: t.EndpointURL, APIKey: key, Model: t.ModelName, API: api, Stream: t.Simulation.Stream,
		IgnoreEOS:   boolOption(opts, "ignore_eos", true),
		Duration:    time.Duration(t.Simulation.DurationSeconds * float64(time.Second)),
		GracePeriod: time.Duration(t.Simulation.GracePeriodSeconds * float64(time.Second)),
		RunID:       t.ID, Seed: seedOf(t.ID)}
	if v, ok := opts["request_timeout_seconds"].(float64); ok && v > 0 {
		cfg.RequestTimeout = time.Duration(v * float64(time.Second))
	}
	if extra, ok := opts["extra_body"].(map[string]any); ok {
		raw, err := json.Marshal(extra)
		if err != nil {
			return cfg, err
		}
		cfg.ExtraBody = raw
	}
	return cfg, nil
}

func boolOption(opts map[string]any, name string, def bool) bool {
	if v, ok := opts[name].(bool); ok {
		return v
	}
	return def
}

func seedOf(id string) uint64 {
	var s uint64 = 1469598103934665603
	for i := 0; i < len(id); i++ {
		s = (s ^ uint64(id[i])) * 1099511628211
	}
	return s
}

// replay runs one task: schedule, send, record; progress and stop requests are handled while
// the engine runs.
func (p *replayer) replay(ctx context.Context, run *Run) (events.TaskReplayed, error) {
	t := run.Task
	out := events.TaskReplayed{TaskID: t.ID}
	schedule, err := p.schedule(ctx, t)
	if err != nil {
		return out, err
	}
	cfg, err := loadConfig(t, run.APIKey)
	if err != nil {
		return out, err
	}
	if err := os.MkdirAll(t.TaskDir, 0o755); err != nil {
		return out, err
	}
	out.RecordsPath = filepath.Join(t.TaskDir, RecordsFile)
	f, err := os.Create(out.RecordsPath)
	if err != nil {
		return out, err
	}
	defer f.Close()
	sink := loadgen.NewJSONLWriter(f)
	progress := &loadgen.Progress{}
	cfg.Progress = progress

	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	timeout := time.Duration(t.Prompt.Trace.TimeoutSeconds * float64(time.Second))
	if timeout > 0 {
		var cancelTimeout context.CancelFunc
		runCtx, cancelTimeout = context.WithTimeoutCause(runCtx, timeout, errTraceTimeout)
		defer cancelTimeout()
	}
	started := time.Now()
	_, _ = run.Repo.Patch(ctx, t.ID, run.Fence(), func(t *simtask.Task) error {
		t.ExecutionStartedAt, t.ProgressMessage = simtask.Now(), "Simulation running"
		t.Internal.ReplayStartedAt = started.UnixNano()
		return nil
	})
	run.Repo.Logf(ctx, t.ID, "Replaying %d requests of %s (%s, scale %g) against %s", len(schedule), t.Prompt.Dataset.Name,
		t.Prompt.Trace.Format, t.Prompt.Trace.SynthesisSpeedupRatio, t.EndpointURL)

	done := make(chan error, 1)
	go func() {
		_, err := loadgen.Run(runCtx, cfg, schedule, sink)
		done <- err
	}()
	tick := time.NewTicker(run.Poll)
	defer tick.Stop()
	lastReport := time.Time{}
	for {
		select {
		case err = <-done:
		case <-tick.C:
			if run.stopRequested(ctx) {
				cancelRun(errStopped)
			}
			if time.Since(lastReport) >= time.Second {
				lastReport = time.Now()
				p.report(ctx, run, progress.Snapshot(), len(schedule), started)
			}
			continue
		}
		break
	}
	if ferr := sink.Close(); ferr != nil && err == nil {
		err = ferr
	}
	out.Requests = int(sink.Count())
	cause := context.Cause(runCtx)
	switch {
	case errors.Is(cause, errStopped):
		out.Outcome, out.Message = simtask.StatusCancelled, "stopped by request"
	case errors.Is(cause, errTraceTimeout):
		out.Outcome, out.Message = simtask.StatusFailed, fmt.Sprintf("the trace timeout of %gs was reached", t.Prompt.Trace.TimeoutSeconds)
	case ctx.Err() != nil:
		return out, context.Cause(ctx)
	case err != nil:
		return out, err
	default:
		out.Outcome, out.Message = simtask.StatusCompleted, "every scheduled request was sent"
	}
	return out, nil
}

var (
	errStopped      = errors.New("stopped by request")
	errTraceTimeout = errors.New("trace timeout reached")
)

// stopRequested reads the task's record (not its logs) for a stop request.
func (r *Run) stopRequested(ctx context.Context) bool {
	t, err := r.Repo.Load(ctx, r.Task.ID)
	return err == nil && t.Internal.CancelRequested
}

// report writes progress and the live summary.
func (p *replayer) report(ctx context.Context, run *Run, s loadgen.ProgressSnapshot, total int, started time.Time) {
	elapsed := time.Since(started).Seconds()
	pct := 100 * float64(s.Completed) / float64(total)
	if d := run.Task.Simulation.DurationSeconds; d > 0 {
		pct = max(pct, 100*elapsed/d)
	}
	pct = math.Round(min(pct, 98)*10) / 10
	_, _ = run.Repo.Patch(ctx, run.Task.ID, run.Fence(), func(t *simtask.Task) error {
		if t.Internal.CancelRequested {
			t.ProgressMessage = "Cancelling"
		} else {
			t.ProgressMessage = fmt.Sprintf("Simulation running: %d of %d requests sent", s.Sent, total)
		}
		t.ProgressPercent = pct
		t.LiveSummary = map[string]any{"scheduled_requests": total, "sent_requests": s.Sent,
			"completed_requests": s.Completed, "successful_requests": s.Successful, "failed_requests": s.Failed,
			"in_flight_requests": s.InFlight, "elapsed_seconds": math.Round(elapsed*10) / 10}
		return nil
	})
}
