package enginemodel

import (
	"fmt"
	"math"
	"slices"
)

// Arrival is one request of a workload to predict.
type Arrival struct {
	At           float64 // seconds from the workload's start
	PromptTokens int
	BlockHashes  []uint64
	OutputTokens int
	Stage        int
}

// Options drive a prediction.
type Options struct {
	Engine Config
	Cost   StepCoster
	// RequestOverhead (seconds) is the API server's time before a request reaches the engine.
	RequestOverhead float64
	// Timeout (seconds, 0: none) fails a request that has not finished that long after it
	// was sent, as a client's timeout does; the engine drops it.
	Timeout float64
}

// Outcome is one request's predicted fate.
type Outcome struct {
	Stage        int
	TTFT, E2E    float64 // seconds from sending; valid unless Failed
	Output       int
	CachedTokens int
	Preemptions  int
	Failed       bool
	Reason       string
}

// Prediction is a whole workload's outcome.
type Prediction struct {
	Outcomes []Outcome
	Counters Counters
	// End is when the last request finished (virtual seconds).
	End float64
	// WaitingAtStageEnd is the waiting queue's length at the end of each stage's arrivals.
	WaitingAtStageEnd []int
}

// Predict runs arrivals (sorted by At) through one engine in virtual time.
func Predict(arrivals []Arrival, opt Options) (*Prediction, error) {
	e, err := New(opt.Engine, opt.Cost)
	if err != nil {
		return nil, err
	}
	if !slices.IsSortedFunc(arrivals, func(a, b Arrival) int { return cmpFloat(a.At, b.At) }) {
		return nil, fmt.Errorf("enginemodel: arrivals must be sorted by time")
	}
	p := &Prediction{Outcomes: make([]Outcome, len(arrivals))}
	seqs := make([]Seq, len(arrivals))
	stageEnds := stageEndTimes(arrivals)
	p.WaitingAtStageEnd = make([]int, len(stageEnds))
	nextStage := 0
	now, next := 0.0, 0
	inFlight := make([]*Seq, 0, 256)
	for step := 0; ; step++ {
		// Requests that reach the engine by now join the waiting queue.
		for next < len(arrivals) && arrivals[next].At+opt.RequestOverhead <= now {
			next = p.admit(e, arrivals, seqs, next, opt.RequestOverhead, &inFlight)
		}
		for nextStage < len(stageEnds) && stageEnds[nextStage] <= now {
			p.WaitingAtStageEnd[nextStage] = e.Waiting()
			nextStage++
		}
		if opt.Timeout > 0 && step%16 == 0 {
			inFlight = p.expire(e, arrivals, inFlight, now, opt.Timeout)
		}
		if e.Idle() {
			if next == len(arrivals) {
				break
			}
			now = max(now, arrivals[next].At+opt.RequestOverhead)
			continue
		}
		d := e.Schedule(now)
		if d <= 0 {
			// Nothing fits (every waiting request is blocked on blocks another waiting
			// request would free): cannot happen with CheckFits, but never spin.
			return nil, fmt.Errorf("enginemodel: the engine stalled with %d waiting requests", e.Waiting())
		}
		now += d
		e.Commit(now, d)
		for _, s := range e.Finished() {
			i := int(s.ID)
			o := &p.Outcomes[i]
			o.TTFT, o.E2E = s.FirstToken-arrivals[i].At, s.Finish-arrivals[i].At
			o.Output, o.CachedTokens, o.Preemptions = s.Generated, s.CachedTokens, s.Preemptions
		}
	}
	for ; nextStage < len(stageEnds); nextStage++ {
		p.WaitingAtStageEnd[nextStage] = 0
	}
	p.Counters, p.End = e.Counters, now
	return p, nil
}

func (p *Prediction) admit(e *Engine, arrivals []Arrival, seqs []Seq, i int, overhead float64, inFlight *[]*Seq) int {
	a := &arrivals[i]
	s := &seqs[i]
	*s = Seq{ID: uint64(i), PromptTokens: a.PromptTokens, BlockHashes: a.BlockHashes, MaxOutput: max(a.OutputTokens, 1)}
	o := &p.Outcomes[i]
	o.Stage = a.Stage
	if err := e.Add(s, a.At+overhead); err != nil {
		o.Failed, o.Reason = true, err.Error()
		return i + 1
	}
	*inFlight = append(*inFlight, s)
	return i + 1
}

// expire fails the requests older than timeout and forgets the finished ones.
func (p *Prediction) expire(e *Engine, arrivals []Arrival, inFlight []*Seq, now, timeout float64) []*Seq {
	kept := inFlight[:0]
	for _, s := range inFlight {
		switch {
		case s.State == Finished || s.State == Aborted:
		case now-arrivals[s.ID].At > timeout:
			e.Abort(s)
			o := &p.Outcomes[s.ID]
			o.Failed, o.Reason = true, "timeout"
		default:
			kept = append(kept, s)
		}
	}
	clear(inFlight[len(kept):])
	return kept
}

func stageEndTimes(arrivals []Arrival) []float64 {
	var ends []float64
	for _, a := range arrivals {
		for len(ends) <= a.Stage {
			ends = append(ends, 0)
		}
		ends[a.Stage] = max(ends[a.Stage], a.At)
	}
	return ends
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Summary is one group of outcomes in a benchmark run's terms (milliseconds).
type Summary struct {
	Requests int     `json:"requests"`
	Failed   int     `json:"failed"`
	TTFTMean float64 `json:"ttft_mean_ms"`
	TTFTP50  float64 `json:"ttft_p50_ms"`
	TTFTP90  float64 `json:"ttft_p90_ms"`
	TTFTP99  float64 `json:"ttft_p99_ms"`
	E2EMean  float64 `json:"e2e_mean_ms"`
	E2EP50   float64 `json:"e2e_p50_ms"`
	E2EP90   float64 `json:"e2e_p90_ms"`
	E2EP99   float64 `json:"e2e_p99_ms"`
	// DecodeIntervalMean is the mean over requests of (E2E - TTFT) / (output - 1).
	DecodeIntervalMean float64 `json:"decode_interval_mean_ms"`
	// DecodeIntervalOfMeans is (E2E mean - TTFT mean) / (mean output - 1), as the ground
	// truth's decode_interval_est_ms is computed.
	DecodeIntervalOfMeans float64 `json:"decode_interval_of_means_ms"`
	OutputTokensMean      float64 `json:"output_tokens_mean"`
	CachedTokensMean      float64 `json:"cached_tokens_mean"`
	Preemptions           int     `json:"preemptions"`
}

// Summarize computes the summary of the outcomes keep selects (nil: all).
func (p *Prediction) Summarize(keep func(*Outcome) bool) Summary {
	var s Summary
	var ttft, e2e []float64
	var di, out, cached float64
	for i := range p.Outcomes {
		o := &p.Outcomes[i]
		if keep != nil && !keep(o) {
			continue
		}
		s.Requests++
		if o.Failed {
			s.Failed++
			continue
		}
		ttft = append(ttft, o.TTFT*1000)
		e2e = append(e2e, o.E2E*1000)
		if o.Output > 1 {
			di += (o.E2E - o.TTFT) * 1000 / float64(o.Output-1)
		}
		out += float64(o.Output)
		cached += float64(o.CachedTokens)
		s.Preemptions += o.Preemptions
	}
	n := float64(len(ttft))
	if n == 0 {
		return s
	}
	s.TTFTMean, s.E2EMean = mean(ttft), mean(e2e)
	slices.Sort(ttft)
	slices.Sort(e2e)
	s.TTFTP50, s.TTFTP90, s.TTFTP99 = Percentile(ttft, 50), Percentile(ttft, 90), Percentile(ttft, 99)
	s.E2EP50, s.E2EP90, s.E2EP99 = Percentile(e2e, 50), Percentile(e2e, 90), Percentile(e2e, 99)
	s.DecodeIntervalMean = di / n
	s.OutputTokensMean, s.CachedTokensMean = out/n, cached/n
	if s.OutputTokensMean > 1 {
		s.DecodeIntervalOfMeans = (s.E2EMean - s.TTFTMean) / (s.OutputTokensMean - 1)
	}
	return s
}

func mean(v []float64) float64 {
	t := 0.0
	for _, x := range v {
		t += x
	}
	return t / float64(len(v))
}

// Percentile of sorted values with linear interpolation (numpy's default, as
// inference-perf computes its percentiles).
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	r := p / 100 * float64(len(sorted)-1)
	lo := int(r)
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	f := r - float64(lo)
	return sorted[lo] + f*(sorted[lo+1]-sorted[lo])
}
