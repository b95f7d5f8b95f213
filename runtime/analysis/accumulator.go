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

// chunkSize records share one chunk (about 228 KiB). Fixed chunks instead of growing slices:
// a million records never copy what is already stored, and never hold twice their size.
const chunkSize = 4096

// chunk stores records column by column, so a pass over one number reads only that number.
type chunk struct {
	n                             int
	scheduled, started, completed [chunkSize]float64 // seconds from the run's start
	latency, ttft, tpot           [chunkSize]float64 // ms; ttft/tpot 0 when the flag is unset
	outputTokens                  [chunkSize]float64
	flags                         [chunkSize]uint8
}

// Accumulator builds a Summary from records added one at a time. It keeps one float64 column per
// number the summary needs later and one flag byte per request, never the records themselves.
// It is not safe for concurrent use; Summary may be called any number of times (for a live
// summary) and does not change the accumulator.
type Accumulator struct {
	opts Options

	chunks []*chunk // records in the order added; every chunk but the last is full
	n      int

	successful, noStatus, good   int64
	inputTokens, outputTokensSum float64
	latencySecondsSum            float64 // every request, for effective concurrency
	firstStart, lastCompletion   float64
	maxScheduled                 float64
	statusCounts                 map[int]int64
	timelineDrift                []float64 // Record.TimelineDriftMs of the records that have one
	failureCauses                causeCounter
}

// New returns an empty accumulator, or an error wrapping ErrInvalidOption.
func New(opts Options) (*Accumulator, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return &Accumulator{opts: opts, statusCounts: map[int]int64{}}, nil
}

// Len is the number of records added so far.
func (a *Accumulator) Len() int { return a.n }

// Live returns the counts a running task reports as live_summary, in constant time.
func (a *Accumulator) Live() Live {
	return Live{CompletedRequests: int64(a.n), SuccessfulRequests: a.successful}
}

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

	if a.n == 0 || rec.StartedAtSeconds < a.firstStart {
		a.firstStart = rec.StartedAtSeconds
	}
	a.lastCompletion = max(a.lastCompletion, rec.CompletedAtSeconds)
	if rec.TimelineDriftMs != nil {
		a.timelineDrift = append(a.timelineDrift, *rec.TimelineDriftMs)
	}
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
	if flags&flagSuccess == 0 {
		a.failureCauses.add(rec.StatusCode, rec.Error)
	}

	if a.n%chunkSize == 0 {
		a.chunks = append(a.chunks, new(chunk))
	}
	c := a.chunks[len(a.chunks)-1]
	i := c.n
	c.scheduled[i], c.started[i], c.completed[i] = rec.ScheduledAtSeconds, rec.StartedAtSeconds, rec.CompletedAtSeconds
	c.latency[i], c.ttft[i], c.tpot[i] = rec.LatencyMs, ttft, tpot
	c.outputTokens[i], c.flags[i] = rec.OutputTokens, flags
	c.n++
	a.n++
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
	// Plain calls rather than a table of pointers into rec, which would move every record to
	// the heap.
	if err := checkNumber(rec, "scheduled_at_seconds", rec.ScheduledAtSeconds); err != nil {
		return err
	}
	if err := checkNumber(rec, "started_at_seconds", rec.StartedAtSeconds); err != nil {
		return err
	}
	if err := checkNumber(rec, "completed_at_seconds", rec.CompletedAtSeconds); err != nil {
		return err
	}
	if err := checkNumber(rec, "latency_ms", rec.LatencyMs); err != nil {
		return err
	}
	if rec.TTFTMs != nil {
		if err := checkNumber(rec, "ttft_ms", *rec.TTFTMs); err != nil {
			return err
		}
	}
	if rec.TPOTMs != nil {
		if err := checkNumber(rec, "tpot_ms", *rec.TPOTMs); err != nil {
			return err
		}
	}
	if d := rec.TimelineDriftMs; d != nil && (math.IsNaN(*d) || math.Abs(*d) > maxMagnitude) {
		// A drift may be negative (earlier than recorded); it is bounded like every other number.
		return fmt.Errorf("%w: request %d: timeline_drift_ms must be a finite number between -%g and %g, got %v", ErrInvalidRecord, rec.RequestID, float64(maxMagnitude), float64(maxMagnitude), *d)
	}
	if err := checkNumber(rec, "input_tokens", rec.InputTokens); err != nil {
		return err
	}
	if err := checkNumber(rec, "output_tokens", rec.OutputTokens); err != nil {
		return err
	}
	if rec.CompletedAtSeconds < rec.StartedAtSeconds {
		return fmt.Errorf("%w: request %d: completed_at_seconds %v is before started_at_seconds %v", ErrInvalidRecord, rec.RequestID, rec.CompletedAtSeconds, rec.StartedAtSeconds)
	}
	if rec.StatusCode != nil && (*rec.StatusCode < 100 || *rec.StatusCode > 599) {
		return fmt.Errorf("%w: request %d: status_code must be an HTTP status (100-599) or null, got %d", ErrInvalidRecord, rec.RequestID, *rec.StatusCode)
	}
	return nil
}

func checkNumber(rec *loadgen.Record, name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > maxMagnitude {
		return fmt.Errorf("%w: request %d: %s must be a finite number between 0 and %g, got %v", ErrInvalidRecord, rec.RequestID, name, float64(maxMagnitude), v)
	}
	return nil
}
