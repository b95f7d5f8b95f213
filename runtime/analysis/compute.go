package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Summary computes the summary of the records added so far. It fails only when the Schedule
// option yields a time that is negative or not finite (an error wrapping ErrInvalidOption).
func (a *Accumulator) Summary() (Summary, error) {
	n := int64(a.n)
	failed := n - a.successful
	window := 0.0
	if n > 0 {
		window = a.lastCompletion - a.firstStart
	}
	perWindow := func(v float64) float64 {
		if window <= 0 {
			return 0
		}
		return v / window
	}
	s := Summary{
		TotalRequests:        n,
		SuccessfulRequests:   a.successful,
		FailedRequests:       failed,
		SuccessRate:          percent(a.successful, n),
		DurationSeconds:      a.opts.DurationSeconds,
		ThroughputRPS:        perWindow(float64(n)),
		ThroughputTPS:        perWindow(a.outputTokensSum),
		TotalInputTokens:     a.inputTokens,
		TotalOutputTokens:    a.outputTokensSum,
		InputThroughputTPS:   perWindow(a.inputTokens),
		TotalThroughputTPS:   perWindow(a.inputTokens + a.outputTokensSum),
		RequestErrorRate:     percent(failed, n),
		EffectiveConcurrency: perWindow(a.latencySecondsSum),
		ClientErrorRequests:  a.noStatus,
		StatusCodeBreakdown:  a.statusCodeBreakdown(n),
	}
	if s.DurationSeconds == 0 {
		s.DurationSeconds = window
	} else {
		configured := a.opts.DurationSeconds
		s.ConfiguredDurationSeconds = &configured
	}
	s.MeasuredDurationSeconds = window
	s.FailureCauses = a.failureCauses.top(failed)
	s.SentRequests = n
	s.NotReleasedByReason = map[string]int64{}
	for reason, count := range a.opts.NotReleased {
		if count > 0 {
			s.NotReleasedByReason[reason] = count
		}
	}
	if sc := a.opts.ScheduledRequests; sc != nil {
		scheduled, notReleased := *sc, max(*sc-n, 0)
		s.ScheduledRequests, s.NotReleasedRequests = &scheduled, &notReleased
	}
	s.SessionTimelineDrift = distribution(append(make([]float64, 0, len(a.timelineDrift)), a.timelineDrift...))

	// One scratch buffer serves every selection below, so Summary allocates n floats once.
	scratch := make([]float64, 0, n)
	s.Latency = distribution(a.collect(scratch, latencyColumn, flagSuccess))
	s.TTFT = distribution(a.collect(scratch, ttftColumn, flagSuccess|flagHasTTFT))
	s.TPOT = distribution(a.collect(scratch, tpotColumn, flagSuccess|flagHasTPOT))
	s.Drift = a.drift(scratch)

	bins, err := a.bins()
	if err != nil {
		return Summary{}, err
	}
	s.CompletionTimeline, err = a.completionTimeline(bins)
	if err != nil {
		return Summary{}, err
	}
	arrivals := a.tally(bins, startedColumn)
	s.LatencyTimeline = a.latencyTimeline(bins, arrivals, latencyColumn, flagSuccess, scratch)
	s.TTFTTimeline = a.latencyTimeline(bins, arrivals, ttftColumn, flagSuccess|flagHasTTFT, scratch)
	s.TPOTTimeline = a.latencyTimeline(bins, arrivals, tpotColumn, flagSuccess|flagHasTPOT, scratch)
	s.ThroughputTimeline, s.ErrorTimeline = a.rateTimelines(bins, arrivals)
	s.GoodputTimeline = []GoodputBin{}
	if a.opts.SLO != nil {
		s.Goodput = a.goodput(s.RequestErrorRate, perWindow(float64(a.good)))
		s.GoodputTimeline = a.goodputTimeline(bins)
	}
	return s, nil
}

func percent(part, whole int64) float64 {
	if whole == 0 {
		return 0
	}
	return float64(part) / float64(whole) * 100
}

// column picks one stored number of a chunk.
type column func(*chunk) *[chunkSize]float64

func scheduledColumn(c *chunk) *[chunkSize]float64 { return &c.scheduled }
func startedColumn(c *chunk) *[chunkSize]float64   { return &c.started }
func latencyColumn(c *chunk) *[chunkSize]float64   { return &c.latency }
func ttftColumn(c *chunk) *[chunkSize]float64      { return &c.ttft }
func tpotColumn(c *chunk) *[chunkSize]float64      { return &c.tpot }

// collect appends to scratch[:0], in the order added, the values of col whose record has every
// bit of want set.
func (a *Accumulator) collect(scratch []float64, col column, want uint8) []float64 {
	values := scratch[:0]
	for _, c := range a.chunks {
		column := col(c)
		for i, f := range c.flags[:c.n] {
			if f&want == want {
				values = append(values, column[i])
			}
		}
	}
	return values
}

// distribution summarises values (in the order added, which fixes the mean's summation order)
// and reorders them in place; nil when there are none.
func distribution(values []float64) *Distribution {
	if len(values) == 0 {
		return nil
	}
	sum, lowest, highest := 0.0, values[0], values[0]
	for _, v := range values {
		sum += v
		lowest, highest = min(lowest, v), max(highest, v)
	}
	n := len(values)
	p50, p90, p95, p99 := rankIndex(n, 50), rankIndex(n, 90), rankIndex(n, 95), rankIndex(n, 99)
	selectRanks(values, p50, p90, p95, p99)
	return &Distribution{
		Count:  int64(n),
		MeanMs: sum / float64(n),
		P50Ms:  values[p50],
		P90Ms:  values[p90],
		P95Ms:  values[p95],
		P99Ms:  values[p99],
		MinMs:  lowest,
		MaxMs:  highest,
	}
}

func (a *Accumulator) drift(scratch []float64) *Drift {
	if a.n == 0 {
		return nil
	}
	values := scratch[:0]
	for _, c := range a.chunks {
		for i := range c.n {
			// Rounded to whole nanoseconds: no clock is finer, and it keeps 2.004 s - 2 s from
			// reading 4.0000000000000036 ms.
			values = append(values, math.Round((c.started[i]-c.scheduled[i])*1e9)/1e6)
		}
	}
	n := len(values)
	p50, p90, p99 := rankIndex(n, 50), rankIndex(n, 90), rankIndex(n, 99)
	selectRanks(values, p50, p90, p99)
	return &Drift{P50Ms: values[p50], P90Ms: values[p90], P99Ms: values[p99]}
}

func (a *Accumulator) statusCodeBreakdown(total int64) []StatusCodeCount {
	rows := make([]StatusCodeCount, 0, len(a.statusCounts)+1)
	for code, count := range a.statusCounts {
		rows = append(rows, StatusCodeCount{StatusCode: &code, Count: count, Percentage: percent(count, total)})
	}
	slices.SortFunc(rows, func(x, y StatusCodeCount) int { return cmp.Compare(*x.StatusCode, *y.StatusCode) })
	if a.noStatus > 0 {
		rows = append(rows, StatusCodeCount{Count: a.noStatus, Percentage: percent(a.noStatus, total)})
	}
	return rows
}

// timelineBins are the equal-width bins every timeline shares, so the charts line up.
type timelineBins struct {
	n     int
	width float64
	span  float64
}

// bins spans the run: at least Options.DurationSeconds, and up to the latest scheduled arrival,
// send or completion (grace-period completions get bins of their own instead of piling into the
// last one). Zero bins when there is nothing to plot.
func (a *Accumulator) bins() (timelineBins, error) {
	span := a.opts.DurationSeconds
	anything := a.n > 0
	if a.n > 0 {
		span = max(span, a.lastCompletion) // completed >= started for every record
	}
	if a.opts.Schedule != nil {
		for at := range a.opts.Schedule {
			if math.IsNaN(at) || math.IsInf(at, 0) || at < 0 || at > maxMagnitude {
				return timelineBins{}, fmt.Errorf("%w: schedule time must be a finite number between 0 and %g seconds, got %v", ErrInvalidOption, float64(maxMagnitude), at)
			}
			span = max(span, at)
			anything = true
		}
	} else {
		span = max(span, a.maxScheduled)
	}
	if !anything {
		return timelineBins{}, nil
	}
	span = max(span, 0.001)
	count := min(MaxTimelineBins, int(math.Ceil(span)))
	return timelineBins{n: count, width: span / float64(count), span: span}, nil
}

func (b timelineBins) index(at float64) int {
	return min(b.n-1, max(0, int(at/b.width)))
}

func (b timelineBins) bounds(i int) (start, end float64) {
	start = float64(i) * b.width
	end = float64(i+1) * b.width
	if i == b.n-1 {
		end = b.span
	}
	return start, end
}

// tally counts every record's time into bins.
func (a *Accumulator) tally(b timelineBins, col column) []int64 {
	counts := make([]int64, b.n)
	if b.n == 0 {
		return counts
	}
	for _, c := range a.chunks {
		for _, at := range col(c)[:c.n] {
			counts[b.index(at)]++
		}
	}
	return counts
}

func (a *Accumulator) completionTimeline(b timelineBins) ([]CompletionBin, error) {
	timeline := make([]CompletionBin, b.n)
	if b.n == 0 {
		return timeline, nil
	}
	arrived := make([]int64, b.n)
	if a.opts.Schedule != nil {
		for at := range a.opts.Schedule {
			if math.IsNaN(at) || at < 0 || at > b.span {
				// The first pass validated every time; a schedule that changes between
				// iterations is a caller bug worth naming rather than miscounting.
				return nil, fmt.Errorf("%w: the schedule yielded different times on its second iteration", ErrInvalidOption)
			}
			arrived[b.index(at)]++
		}
	} else {
		arrived = a.tally(b, scheduledColumn)
	}
	var cumulativeArrived, cumulativeCompleted int64
	for _, c := range a.chunks {
		for i, f := range c.flags[:c.n] {
			bin := &timeline[b.index(c.completed[i])]
			bin.CompletedRequests++
			switch {
			case f&flagSuccess != 0:
				bin.SuccessfulRequests++
			case f&flagNoStatus != 0:
				bin.FailedRequests++
				bin.ClientTimeoutRequests++
			default:
				bin.FailedRequests++
				bin.BackendErrorRequests++
			}
		}
	}
	for i := range timeline {
		bin := &timeline[i]
		bin.StartSeconds, bin.EndSeconds = b.bounds(i)
		bin.ArrivedRequests = arrived[i]
		cumulativeArrived += arrived[i]
		cumulativeCompleted += bin.CompletedRequests
		bin.CumulativeArrived, bin.CumulativeCompleted = cumulativeArrived, cumulativeCompleted
	}
	return timeline, nil
}

// latencyTimeline groups col's values (records having every bit of want) by send time. It
// scatters them bin by bin into scratch (a counting sort on the bin), then selects each bin's
// p95, so the whole timeline costs two passes and one buffer.
func (a *Accumulator) latencyTimeline(b timelineBins, arrivals []int64, col column, want uint8, scratch []float64) []LatencyBin {
	timeline := make([]LatencyBin, b.n)
	if b.n == 0 {
		return timeline
	}
	offsets := make([]int, b.n+1)
	for _, c := range a.chunks {
		for i, f := range c.flags[:c.n] {
			if f&want == want {
				offsets[b.index(c.started[i])+1]++
			}
		}
	}
	for i := 1; i <= b.n; i++ {
		offsets[i] += offsets[i-1]
	}
	scattered := scratch[:offsets[b.n]]
	next := slices.Clone(offsets[:b.n])
	for _, c := range a.chunks {
		values := col(c)
		for i, f := range c.flags[:c.n] {
			if f&want == want {
				bin := b.index(c.started[i])
				scattered[next[bin]] = values[i]
				next[bin]++
			}
		}
	}
	for i := range timeline {
		bin := &timeline[i]
		bin.StartSeconds, bin.EndSeconds = b.bounds(i)
		bin.RequestArrivalRPS = float64(arrivals[i]) / b.width
		inBin := scattered[offsets[i]:offsets[i+1]]
		bin.RequestCount = int64(len(inBin))
		if len(inBin) == 0 {
			continue
		}
		sum := 0.0
		for _, v := range inBin {
			sum += v
		}
		k := rankIndex(len(inBin), 95)
		selectRanks(inBin, k)
		average, p95 := sum/float64(len(inBin)), inBin[k]
		bin.AverageLatencyMs, bin.P95LatencyMs = &average, &p95
	}
	return timeline
}

func (a *Accumulator) rateTimelines(b timelineBins, arrivals []int64) ([]ThroughputBin, []ErrorBin) {
	throughput := make([]ThroughputBin, b.n)
	errs := make([]ErrorBin, b.n)
	for _, c := range a.chunks {
		for i, f := range c.flags[:c.n] {
			bin := b.index(c.completed[i])
			throughput[bin].Completed++
			throughput[bin].OutputTokens += c.outputTokens[i]
			if f&flagSuccess == 0 {
				errs[bin].FailedRequests++
			}
		}
	}
	var cumulative int64
	for i := range throughput {
		t, e := &throughput[i], &errs[i]
		t.StartSeconds, t.EndSeconds = b.bounds(i)
		e.StartSeconds, e.EndSeconds = t.StartSeconds, t.EndSeconds
		t.Arrived = arrivals[i]
		t.RequestArrivalRPS = float64(t.Arrived) / b.width
		t.RequestCompletionRPS = float64(t.Completed) / b.width
		t.TokenThroughputTPS = t.OutputTokens / b.width
		e.ErrorRatePercent = percent(e.FailedRequests, t.Completed)
		cumulative += e.FailedRequests
		e.CumulativeFailures = cumulative
	}
	return throughput, errs
}

func (a *Accumulator) goodput(errorRate, goodputRPS float64) *Goodput {
	slo := a.opts.SLO
	g := &Goodput{
		GoodRequests:       a.good,
		GoodRequestPercent: percent(a.good, int64(a.n)),
		GoodputRPS:         goodputRPS,
	}
	if slo.TTFTSeconds > 0 {
		ms := slo.TTFTSeconds * 1000
		g.TTFTSLOMs = &ms
	}
	if slo.TPOTSeconds > 0 {
		ms := slo.TPOTSeconds * 1000
		g.TPOTSLOMs = &ms
	}
	if slo.ErrorRatePercent > 0 {
		limit, met := slo.ErrorRatePercent, errorRate <= slo.ErrorRatePercent
		g.ErrorRateSLOPercent, g.ErrorRateSLOMet = &limit, &met
	}
	return g
}

func (a *Accumulator) goodputTimeline(b timelineBins) []GoodputBin {
	timeline := make([]GoodputBin, b.n)
	for _, c := range a.chunks {
		for i, f := range c.flags[:c.n] {
			bin := &timeline[b.index(c.completed[i])]
			bin.CompletedRequests++
			if f&flagGood != 0 {
				bin.GoodRequests++
			}
		}
	}
	for i := range timeline {
		bin := &timeline[i]
		bin.StartSeconds, bin.EndSeconds = b.bounds(i)
		bin.RequestThroughputRPS = float64(bin.CompletedRequests) / b.width
		bin.GoodputRPS = float64(bin.GoodRequests) / b.width
	}
	return timeline
}
