package tracereplayer

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/egress"
	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/runtime/secret"
	"github.com/lensfn/lensfn/runtime/simtask"
)

// aiperfRunner replays tasks of the aiperf backend with the aiperf command (NVIDIA AIPerf), then
// converts its per-request export into the same records the trace-replayer writes, so the
// result analyzer treats both backends alike.
type aiperfRunner struct {
	command string // path of the aiperf executable
	// policy is the operator's endpoint policy: aiperf dials on its own, so the endpoint is
	// checked before it starts (nil: the default denies only).
	policy *egress.Policy
}

// aiperfVersion asks the command for its version ("" when it will not say).
func aiperfVersion(ctx context.Context, command string) string {
	out, err := exec.CommandContext(ctx, command, "--version").Output()
	if err != nil {
		return ""
	}
	fields := strings.Fields(string(out))
	if len(fields) == 0 {
		return ""
	}
	return fields[len(fields)-1]
}

// args maps a task onto `aiperf profile` (trace-formats.md sections 6 and 8). Trace offsets are
// ms on AIPerf's loader axis, which is the file's own axis for every format but Baseten, whose
// loader re-bases to the first request; --fixed-schedule-auto-offset starts the replay at the
// window's first request, as the trace-replayer does.
func aiperfArgs(t *simtask.Task, artifactDir string) []string {
	tr := t.Prompt.Trace
	endpointType := "chat"
	if tr.Format == "baseten_trace" {
		endpointType = "completions"
	}
	args := []string{"profile", "--model", t.ModelName, "--url", strings.TrimSuffix(strings.TrimRight(t.EndpointURL, "/"), "/v1"),
		"--endpoint-type", endpointType, "--input-file", tr.Path, "--custom-dataset-type", tr.Format,
		"--artifact-dir", artifactDir, "--random-seed", strconv.FormatUint(loadgen.SeedOf(t.ID)%(1<<31), 10),
		"--benchmark-duration", formatSeconds(t.Simulation.DurationSeconds),
		"--benchmark-grace-period", formatSeconds(t.Simulation.GracePeriodSeconds),
		"--request-timeout-seconds", formatSeconds(tr.TimeoutSeconds)}
	if t.Simulation.Stream {
		args = append(args, "--streaming")
	}
	if tr.FixedSchedule {
		args = append(args, "--fixed-schedule", "--fixed-schedule-auto-offset",
			"--fixed-schedule-start-offset", strconv.FormatInt(int64(math.Round(tr.StartSeconds*1000)), 10))
		if tr.EndSeconds != nil {
			args = append(args, "--fixed-schedule-end-offset", strconv.FormatInt(int64(math.Round(*tr.EndSeconds*1000)), 10))
		}
	}
	if tr.Format == "baseten_trace" && tr.SynthesisSpeedupRatio != 1 {
		args = append(args, "--replay-speedup", strconv.FormatFloat(tr.SynthesisSpeedupRatio, 'g', -1, 64))
	}
	if boolOption(t.Simulation.BackendOptions, "ignore_eos", true) {
		args = append(args, "--extra-inputs", "ignore_eos:true")
	}
	return args
}

func formatSeconds(s float64) string { return strconv.FormatFloat(s, 'f', -1, 64) }

// replay runs aiperf to completion (or until stopped) and converts its export.
func (a *aiperfRunner) replay(ctx context.Context, run *Run) (events.TaskReplayed, error) {
	t := run.Task
	out := events.TaskReplayed{TaskID: t.ID, RecordsPath: filepath.Join(t.TaskDir, RecordsFile)}
	if err := a.policy.Check(ctx, t.EndpointURL); err != nil {
		return out, fmt.Errorf("endpoint %s: %w", t.EndpointURL, egress.Reason(err))
	}
	dir := filepath.Join(t.TaskDir, "aiperf")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return out, err
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	args := aiperfArgs(t, dir)
	cmd := exec.CommandContext(runCtx, a.command, args...)
	// The key reaches aiperf through its flag; it is added last so the logged command line
	// (below) never shows it.
	if run.APIKey != "" {
		cmd.Args = append(cmd.Args, "--api-key", run.APIKey)
	}
	logFile, err := os.Create(filepath.Join(dir, "aiperf.log"))
	if err != nil {
		return out, err
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	run.Repo.Logf(ctx, t.ID, "Running aiperf %s", strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		return out, fmt.Errorf("start aiperf: %w", err)
	}
	_, _ = run.Repo.Patch(ctx, t.ID, run.Fence(), func(t *simtask.Task) error {
		t.ExecutionStartedAt, t.ProgressMessage = simtask.Now(), "Simulation running (aiperf)"
		return nil
	})
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var waitErr error
	for waiting := true; waiting; {
		select {
		case waitErr = <-done:
			waiting = false
		case <-run.ticker():
			if run.stopRequested(ctx) {
				cancel(errStopped)
			}
		}
	}
	stopped := errors.Is(context.Cause(runCtx), errStopped)
	if ctx.Err() != nil {
		return out, context.Cause(ctx)
	}
	if waitErr != nil && !stopped {
		return out, fmt.Errorf("aiperf failed (%v); its log is %s", waitErr, filepath.Join(dir, "aiperf.log"))
	}
	n, err := convertAIPerfExport(filepath.Join(dir, "profile_export.jsonl"), out.RecordsPath, run.APIKey)
	if err != nil {
		return out, err
	}
	out.Requests = n
	if stopped {
		out.Outcome, out.Message = simtask.StatusCancelled, "stopped by request"
	} else {
		out.Outcome, out.Message = simtask.StatusCompleted, "every scheduled request was sent"
	}
	return out, nil
}

// aiperfLine is one line of AIPerf's profile_export.jsonl.
type aiperfLine struct {
	Metadata struct {
		RequestStartNs int64  `json:"request_start_ns"`
		RequestEndNs   int64  `json:"request_end_ns"`
		ConversationID string `json:"conversation_id"`
		TurnIndex      int    `json:"turn_index"`
		XRequestID     string `json:"x_request_id"`
		BenchmarkPhase string `json:"benchmark_phase"`
		WasCancelled   bool   `json:"was_cancelled"`
	} `json:"metadata"`
	Metrics map[string]struct {
		Value json.RawMessage `json:"value"`
	} `json:"metrics"`
	Error *struct {
		Code    *int   `json:"code"`
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func (l *aiperfLine) metric(name string) (float64, bool) {
	m, ok := l.Metrics[name]
	if !ok {
		return 0, false
	}
	var v float64
	if json.Unmarshal(m.Value, &v) != nil {
		return 0, false
	}
	return v, true
}

// convertAIPerfExport writes loadgen records for AIPerf's profiling-phase requests, times made
// relative to the first request's start. AIPerf keeps no schedule per request, so a record's
// scheduled time is its start (drift is not measured for this backend).
// Error messages are redacted of key (the task's) and of any Bearer token.
func convertAIPerfExport(src, dst, key string) (int, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, fmt.Errorf("aiperf wrote no per-request export: %w", err)
	}
	defer in.Close()
	var lines []aiperfLine
	var first int64 = math.MaxInt64
	r := bufio.NewReaderSize(in, 1<<16)
	for lineNo := 1; ; lineNo++ {
		raw, err := r.ReadBytes('\n')
		if len(strings.TrimSpace(string(raw))) > 0 {
			var l aiperfLine
			if jerr := json.Unmarshal(raw, &l); jerr != nil {
				return 0, fmt.Errorf("%s line %d: %w", filepath.Base(src), lineNo, jerr)
			}
			if l.Metadata.BenchmarkPhase == "" || l.Metadata.BenchmarkPhase == "profiling" {
				lines = append(lines, l)
				first = min(first, l.Metadata.RequestStartNs)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	out, err := os.Create(dst)
	if err != nil {
		return 0, err
	}
	w := loadgen.NewJSONLWriter(out)
	for i, l := range lines {
		rec := loadgen.Record{RequestID: int64(i + 1), SessionID: l.Metadata.ConversationID, Turn: l.Metadata.TurnIndex,
			StartedAtSeconds:   float64(l.Metadata.RequestStartNs-first) / 1e9,
			CompletedAtSeconds: float64(l.Metadata.RequestEndNs-first) / 1e9,
			Metadata:           map[string]any{"x_request_id": l.Metadata.XRequestID}}
		rec.ScheduledAtSeconds = rec.StartedAtSeconds
		rec.LatencyMs = float64(l.Metadata.RequestEndNs-l.Metadata.RequestStartNs) / 1e6
		if v, ok := l.metric("request_latency"); ok {
			rec.LatencyMs = v
		}
		if v, ok := l.metric("input_sequence_length"); ok {
			rec.InputTokens = v
		} else if v, ok := l.metric("error_isl"); ok {
			rec.InputTokens = v
		}
		if v, ok := l.metric("output_sequence_length"); ok {
			rec.OutputTokens = v
		}
		if v, ok := l.metric("time_to_first_token"); ok {
			rec.TTFTMs = &v
		}
		if v, ok := l.metric("inter_token_latency"); ok {
			rec.TPOTMs = &v
		}
		switch {
		case l.Error != nil:
			msg := secret.Redact(strings.TrimSpace(l.Error.Type+": "+l.Error.Message), key)
			rec.Error, rec.StatusCode = &msg, l.Error.Code
			if rec.StatusCode != nil && (*rec.StatusCode < 100 || *rec.StatusCode > 599) {
				rec.StatusCode = nil // AIPerf's own codes (499 cancelled is HTTP-like; others are not)
			}
		case l.Metadata.WasCancelled:
			msg := "cancelled by aiperf"
			rec.Error = &msg
		default:
			ok := 200
			rec.StatusCode, rec.Successful = &ok, true
		}
		if err := w.Record(rec); err != nil {
			out.Close()
			return 0, err
		}
	}
	return len(lines), w.Close() // closes the file too
}
