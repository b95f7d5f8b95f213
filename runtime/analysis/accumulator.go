package analysis

import (
	"errors"
	"fmt"
	"math"

	"github.com/lensfn/lensfn/runtime/loadgen"
)

// ErrInvalidRecord marks a record the accumulator refuses: a number that is not finite, negative
// or implausibly large, a completion before the send, a status code outside 100-599.
var ErrInvalidRecord = errors.New("invalid per-request record")

// maxMagnitude bounds every number of a record (seconds, milliseconds, tokens) so that sums over
// any realistic run stay finite and summary.json never carries Inf.
const maxMagnitude = 1e12

// Flags kept per request, one byte each.
const (
	flagSuccess  uint8 = 1 << iota // 2xx, no error, marked successful by the load engine
	flagNoStatus                   // no HTTP status: transport error or timeout
	flagGood                       // successful and within every TTFT/TPOT objective set
	flagHasTTFT                    // the record reported a first token
	flagHasTPOT                    // the record reported a TPOT (two or more output tokens)
)

// Accumulator builds a Summary from records added one at a time. It keeps one float64 column per
// number the summary needs later and one flag byte per request, never the records themselves.
// It is not safe for concurrent use; Summary may be called any number of times (for a live
// summary) and does not change the accumulator.
type Accumulator struct {
	opts Options

	// Columns, one entry per record in the order added.
	scheduled, started, completed []float64 // seconds from the run's start
	latency, ttft, tpot           []float64 // milliseconds; ttft/tpot 0 when the flag is unset
	outputTokens                  []float64
	flags                         []uint8

	successful, noStatus, good   int64
	inputTokens, outputTokensSum float64
	latencySecondsSum            float64 // every request, for effective concurrency
	firstStart, lastCompletion   float64
	maxScheduled                 float64
	statusCounts                 map[int]int64
}

// New returns an empty accumulator, or an error wrapping ErrInvalidOption.
func New(opts Options) (*Accumulator, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return &Accumulator{opts: opts, statusCounts: map[int]int64{}}, nil
}

// Len is the number of records added so far.
func (a *Accumulator) Len() int { return len(a.flags) }

// Add takes one record. A request is successful when the load engine marked it so, its status
// is 2xx and it carries no error (NOTES.md: a transport error, a timeout or a non-2xx status
// fails it). An invalid record is refused with an error wrapping ErrInvalidRecord and leaves the
// accumulator unchanged.
func (a *Accumulator) Add(rec loadgen.Record) error {
	if err := validateRecord(&rec); err != nil {
		return err
	}
	var flags uint8
	hasError := rec.Error != nil && *rec.Error != ""
	if rec.StatusCode == nil {
		flags |= flagNoStatus
	} else if rec.Successful && !hasError && *rec.StatusCode >= 200 && *rec.StatusCode < 300 {
		flags |= flagSuccess
	}
	var ttft, tpot float64
	if rec.TTFTMs != nil {
		flags |= flagHasTTFT
		ttft = *rec.TTFTMs
	}
	if rec.TPOTMs != nil {
		flags |= flagHasTPOT
		tpot = *rec.TPOTMs
	}
	if flags&flagSuccess != 0 && a.opts.SLO != nil && a.meetsSLO(flags, ttft, tpot) {
		flags |= flagGood
	}

	if len(a.flags) == 0 || rec.StartedAtSeconds < a.firstStart {
		a.firstStart = rec.StartedAtSeconds
	}
	a.lastCompletion = max(a.lastCompletion, rec.CompletedAtSeconds)
	a.maxScheduled = max(a.maxScheduled, rec.ScheduledAtSeconds)
	a.inputTokens += rec.InputTokens
	a.outputTokensSum += rec.OutputTokens
	a.latencySecondsSum += rec.LatencyMs / 1000
	switch {
	case flags&flagSuccess != 0:
		a.successful++
	case flags&flagNoStatus != 0:
		a.noStatus++
	}
	if flags&flagGood != 0 {
		a.good++
	}
	if rec.StatusCode != nil {
		a.statusCounts[*rec.StatusCode]++
	}

	a.scheduled = append(a.scheduled, rec.ScheduledAtSeconds)
	a.started = append(a.started, rec.StartedAtSeconds)
	a.completed = append(a.completed, rec.CompletedAtSeconds)
	a.latency = append(a.latency, rec.LatencyMs)
	a.ttft = append(a.ttft, ttft)
	a.tpot = append(a.tpot, tpot)
	a.outputTokens = append(a.outputTokens, rec.OutputTokens)
	a.flags = append(a.flags, flags)
	return nil
}

// meetsSLO: a request without a first token cannot show it met a TTFT objective; one without a
// TPOT (fewer than two output tokens) has no decode phase to miss a TPOT objective with.
func (a *Accumulator) meetsSLO(flags uint8, ttftMs, tpotMs float64) bool {
	slo := a.opts.SLO
	if slo.TTFTSeconds > 0 && (flags&flagHasTTFT == 0 || ttftMs > slo.TTFTSeconds*1000) {
		return false
	}
	if slo.TPOTSeconds > 0 && flags&flagHasTPOT != 0 && tpotMs > slo.TPOTSeconds*1000 {
		return false
	}
	return true
}

func validateRecord(rec *loadgen.Record) error {
	check := func(name string, v float64) error {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > maxMagnitude {
			return fmt.Errorf("%w: request %d: %s must be a finite number between 0 and %g, got %v", ErrInvalidRecord, rec.RequestID, name, float64(maxMagnitude), v)
		}
		return nil
	}
	fields := []struct {
		name  string
		value *float64
	}{
		{"scheduled_at_seconds", &rec.ScheduledAtSeconds},
		{"started_at_seconds", &rec.StartedAtSeconds},
		{"completed_at_seconds", &rec.CompletedAtSeconds},
		{"latency_ms", &rec.LatencyMs},
		{"ttft_ms", rec.TTFTMs},
		{"tpot_ms", rec.TPOTMs},
		{"input_tokens", &rec.InputTokens},
		{"output_tokens", &rec.OutputTokens},
	}
	for _, f := range fields {
		if f.value == nil {
			continue
		}
		if err := check(f.name, *f.value); err != nil {
			return err
		}
	}
	if rec.CompletedAtSeconds < rec.StartedAtSeconds {
		return fmt.Errorf("%w: request %d: completed_at_seconds %v is before started_at_seconds %v", ErrInvalidRecord, rec.RequestID, rec.CompletedAtSeconds, rec.StartedAtSeconds)
	}
	if rec.StatusCode != nil && (*rec.StatusCode < 100 || *rec.StatusCode > 599) {
		return fmt.Errorf("%w: request %d: status_code must be an HTTP status (100-599) or null, got %d", ErrInvalidRecord, rec.RequestID, *rec.StatusCode)
	}
	return nil
}
