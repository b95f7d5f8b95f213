package tracereplayer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/runtime/simtask"
	"github.com/lensfn/lensfn/runtime/tracespool"
	"github.com/lensfn/lensfn/runtime/wasmhost"
)

// Version is the trace-replayer backend's version, written into task results.
const Version = "0.1.0"

// RecordsFile is the per-request artifact a replay writes in the task folder.
const RecordsFile = "per-request.jsonl"

// replayer turns a claimed task into requests on the recorded schedule.
type replayer struct {
	host *wasmhost.Host
	// dial opens the engine's connections through the operator's endpoint policy.
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// schedule parses the task's trace through its format's module, keeping the window and applying
// the scale factor, into a spool in the task's folder, so a million-request trace is held on
// disk, not in memory. The caller closes the schedule, which removes the spool. beyond is how
// many records of the trace were left out only because the run's duration ends before them.
func (p *replayer) schedule(ctx context.Context, t *simtask.Task) (_ *TraceSchedule, beyond int64, _ error) {
	// On a first start the module may still be compiling: the replay waits for it.
	if err := p.host.Wait(ctx, t.Prompt.Trace.Format); err != nil {
		return nil, 0, err
	}
	parser, err := p.host.Parser(t.Prompt.Trace.Format)
	if err != nil {
		return nil, 0, fmt.Errorf("no parser module for %s: %w", t.Prompt.Trace.Format, err)
	}
	tr := t.Prompt.Trace
	opts := wasmhost.ParseOptions{StartSeconds: tr.StartSeconds, EndSeconds: tr.EndSeconds, ScaleFactor: tr.SynthesisSpeedupRatio}
	caps := parser.Info().Capabilities
	durationBound := opts.EndSeconds == nil && caps[wasmhost.CapabilityTraceRange] && !caps[wasmhost.CapabilitySelectsTraceRange]
	if durationBound {
		// Without an end, the run's duration bounds the window: later records could never be
		// sent (they count as due after the duration). A format that selects sessions or turns
		// itself, such as WEKA, is left whole: the engine counts what the duration cuts off.
		end := tr.StartSeconds + t.Simulation.DurationSeconds*max(tr.SynthesisSpeedupRatio, 1e-9)
		opts.EndSeconds = &end
	}
	w, err := tracespool.Create(t.TaskDir)
	if err != nil {
		return nil, 0, err
	}
	st, err := parser.Parse(ctx, wasmhost.Source{Path: tr.Path}, opts, w.Append)
	if err != nil {
		w.Abort()
		return nil, 0, fmt.Errorf("parse %s: %w", filepath.Base(tr.Path), err)
	}
	if w.Len() == 0 {
		w.Abort()
		return nil, 0, errors.New("the selected trace window holds no requests")
	}
	spool, err := w.Finish()
	if err != nil {
		return nil, 0, err
	}
	if durationBound {
		beyond = int64(st.AfterEnd)
	}
	return NewTraceSchedule(spool, tr.Path, tr.FixedSchedule).WithTimeline(tr.StartSeconds, tr.SynthesisSpeedupRatio), beyond, nil
}

// TraceSchedule is a parsed trace as the load engine's schedule: each spooled record becomes a
// request when the engine loads it.
type TraceSchedule struct {
	spool         *tracespool.Spool
	tracePath     string
	fixedSchedule bool
	startMs       float64 // the window's start: recorded positions are shifted by it
	scale         float64 // and divided by it (0: 1)
}

// NewTraceSchedule serves the records of spool, parsed from the trace at tracePath, as
// requests; without a fixed schedule every session starts at once and later turns follow their
// previous turn. Closing it closes the spool.
func NewTraceSchedule(spool *tracespool.Spool, tracePath string, fixedSchedule bool) *TraceSchedule {
	return &TraceSchedule{spool: spool, tracePath: tracePath, fixedSchedule: fixedSchedule}
}

// WithTimeline places recorded positions on the run's clock, as the parse placed arrivals:
// shifted by the window's start and divided by the scale factor.
func (s *TraceSchedule) WithTimeline(startSeconds, scale float64) *TraceSchedule {
	s.startMs, s.scale = startSeconds*1000, scale
	return s
}

// Len implements loadgen.Schedule.
func (s *TraceSchedule) Len() int { return s.spool.Len() }

// Load implements loadgen.Schedule.
func (s *TraceSchedule) Load(i int, req *loadgen.Request) error {
	var r wasmhost.TraceRequest
	if err := s.spool.Read(i, &r); err != nil {
		return err
	}
	*req = s.request(&r)
	return nil
}

// Close removes the spool.
func (s *TraceSchedule) Close() error { return s.spool.Close() }

// request converts a parsed trace record into a load-engine request.
func (s *TraceSchedule) request(r *wasmhost.TraceRequest) loadgen.Request {
	req := loadgen.Request{SessionID: r.SessionID, Turn: r.TurnIndex, ArrivalMs: r.ArrivalMs, DelayMs: r.DelayMs,
		InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, HashIDs: r.HashIDs, BlockSize: r.BlockSize,
		Prompt: r.Prompt, Messages: r.Messages, Tools: r.Tools, Payload: r.Payload, Extra: r.Extra,
		ContextMode: loadgen.ContextMode(r.ContextMode), JoinDelayMs: r.JoinDelayMs,
		Metadata: map[string]any{"recorded_ms": r.RecordedMs, "line": r.Line}}
	scale := s.scale
	if scale <= 0 {
		scale = 1
	}
	recorded := (r.RecordedMs - s.startMs) / scale
	req.RecordedMs = &recorded
	if l := r.Subagent; l != nil {
		req.Subagent = &loadgen.SubagentLink{ParentSessionID: l.ParentSessionID, SpawnAfterTurn: l.SpawnAfterTurn, JoinBeforeTurn: l.JoinBeforeTurn}
		req.Metadata["parent_session_id"] = l.ParentSessionID
		if l.AgentID != "" {
			req.Metadata["agent_id"] = l.AgentID
		}
		if l.AgentType != "" {
			req.Metadata["agent_type"] = l.AgentType
		}
	}
	if !s.fixedSchedule && req.ArrivalMs != nil {
		zero := 0.0 // not on the recorded schedule: every session starts at once
		if req.Turn == 0 {
			req.ArrivalMs = &zero
		} else {
			req.ArrivalMs = nil
		}
	}
	if r.Source != "" && filepath.Base(r.Source) != filepath.Base(s.tracePath) {
		req.Metadata["source"] = filepath.Base(r.Source)
	}
	return req
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
		RunID:       t.ID, Seed: loadgen.SeedOf(t.ID)}
	if v, ok := opts["request_timeout_seconds"].(float64); ok && v > 0 {
		cfg.RequestTimeout = time.Duration(v * float64(time.Second))
	}
	if v, ok := opts[SubagentTimingOption]; ok {
		timing, ok := v.(string)
		if !ok || !validSubagentTiming(timing) {
			return cfg, fmt.Errorf("backend_options.%s %v is not %q or %q", SubagentTimingOption, v, loadgen.SubagentsAtSpawn, loadgen.SubagentsAtRecordedOffsets)
		}
		cfg.SubagentTiming = loadgen.SubagentTiming(timing)
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

// SubagentTimingOption is the backend option that picks the subagent timing of session formats
// (loadgen.SubagentsAtSpawn, the default, or loadgen.SubagentsAtRecordedOffsets).
const SubagentTimingOption = "subagent_timing"

func validSubagentTiming(v string) bool {
	return v == string(loadgen.SubagentsAtSpawn) || v == string(loadgen.SubagentsAtRecordedOffsets)
}

func boolOption(opts map[string]any, name string, def bool) bool {
	if v, ok := opts[name].(bool); ok {
		return v
	}
	return def
}

// replay runs one task: schedule, send, record; progress and stop requests are handled while
// the engine runs.
func (p *replayer) replay(ctx context.Context, run *Run) (events.TaskReplayed, error) {
	t := run.Task
	out := events.TaskReplayed{TaskID: t.ID}
	cfg, err := loadConfig(t, run.APIKey)
	if err != nil {
		return out, err
	}
	cfg.Dial = p.dial
	if err := os.MkdirAll(t.TaskDir, 0o755); err != nil {
		return out, err
	}
	schedule, beyond, err := p.schedule(ctx, t)
	if err != nil {
		return out, err
	}
	defer schedule.Close()
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
	run.Repo.Logf(ctx, t.ID, "Replaying %d requests of %s (%s, scale %g) against %s", schedule.Len(), t.Prompt.Dataset.Name,
		t.Prompt.Trace.Format, t.Prompt.Trace.SynthesisSpeedupRatio, t.EndpointURL)

	done := make(chan error, 1)
	var stats loadgen.Stats
	go func() {
		var err error
		stats, err = loadgen.RunSchedule(runCtx, cfg, schedule, sink)
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
				// Records on disk stay at most a second behind, even when few arrive: they are
				// what a crash of this process leaves for the analyzer.
				if err := sink.Flush(); err != nil {
					run.Repo.Logf(ctx, t.ID, "Writing the records failed: %v", err)
				}
				p.report(ctx, run, progress.Snapshot(), schedule.Len(), started)
			}
			continue
		}
		break
	}
	if ferr := sink.Close(); ferr != nil && err == nil {
		err = ferr
	}
	out.Requests = int(sink.Count())
	counts := replayCounts(stats, beyond)
	if warning := counts.Warning(t.Simulation.DurationSeconds); warning != "" {
		run.Repo.Logf(ctx, t.ID, "%s", warning)
	}
	_, _ = run.Repo.Patch(ctx, t.ID, run.Fence(), func(t *simtask.Task) error {
		t.Internal.Replay = &counts
		return nil
	})
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
	case counts.Unreleased() > 0:
		out.Outcome = simtask.StatusCompleted
		out.Message = fmt.Sprintf("the run's duration of %gs ended the replay: %d of %d scheduled requests sent",
			t.Simulation.DurationSeconds, counts.Sent, counts.Scheduled)
	default:
		out.Outcome, out.Message = simtask.StatusCompleted, "every scheduled request was sent"
	}
	return out, nil
}

// replayCounts is what the task records of a run: the engine's counts, plus the records the
// duration kept out of the schedule before it began (beyond), which were due after it too.
func replayCounts(st loadgen.Stats, beyond int64) simtask.ReplayCounts {
	c := simtask.ReplayCounts{Scheduled: st.Scheduled + beyond, Sent: st.Sent, NotSent: map[string]int64{}}
	for reason, n := range map[string]int64{simtask.NotSentAfterDuration: st.Unreleased.AfterDuration + beyond,
		simtask.NotSentWaiting: st.Unreleased.Waiting, simtask.NotSentRunEnded: st.Unreleased.RunEnded} {
		if n > 0 {
			c.NotSent[reason] = n
		}
	}
	return c
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
