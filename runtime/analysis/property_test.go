package analysis_test

import (
	"math"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"testing"

	"github.com/lensfn/lensfn/runtime/analysis"
	"github.com/lensfn/lensfn/runtime/loadgen"
)

// TestAccumulatorMatchesNaive: on random runs the streaming accumulator gives exactly (bit for
// bit) what a direct computation over the whole record list gives. The naive version follows
// the Lens reference's analytics.py shape: lists per bin, a float ceil for the rank.
func TestAccumulatorMatchesNaive(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		records, opts, schedule := randomRun(rng)
		got := summarize(t, opts, records...)
		want := naiveSummary(records, opts, schedule)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d (%d records): accumulator and naive differ\naccumulator: %s\nnaive:       %s", seed, len(records), mustJSON(t, got), mustJSON(t, want))
		}
	}
}

func randomRun(rng *rand.Rand) ([]loadgen.Record, analysis.Options, []float64) {
	n := rng.IntN(300)
	if rng.IntN(10) == 0 {
		n = 0
	}
	quantum := []float64{0.001, 0.25, 1}[rng.IntN(3)] // coarse times land on bin edges
	horizon := []float64{0.5, 5, 60, 500}[rng.IntN(4)]
	round := func(v float64) float64 { return math.Round(v/quantum) * quantum }
	statuses := []*int{ptr(200), ptr(200), ptr(200), ptr(201), ptr(429), ptr(500), ptr(503), nil}
	records := make([]loadgen.Record, 0, n)
	for i := range n {
		scheduled := round(rng.Float64() * horizon)
		started := scheduled + round(rng.ExpFloat64()*0.002)
		latency := round(rng.ExpFloat64()*horizon/10) * 1000
		if rng.IntN(8) == 0 {
			latency = 500 // ties
		}
		status := statuses[rng.IntN(len(statuses))]
		rec := loadgen.Record{
			RequestID: int64(i + 1), StatusCode: status,
			Successful:         status != nil && *status < 300 && rng.IntN(20) != 0,
			ScheduledAtSeconds: scheduled, StartedAtSeconds: started,
			CompletedAtSeconds: started + latency/1000, LatencyMs: latency,
			InputTokens: float64(rng.IntN(4000)), OutputTokens: float64(rng.IntN(500)),
		}
		if !rec.Successful && rng.IntN(2) == 0 {
			rec.Error = ptr([]string{"boom", "prompt of " + strconv.Itoa(rng.IntN(9000)) + " tokens is too long"}[rng.IntN(2)])
		}
		if rng.IntN(5) != 0 {
			rec.TTFTMs = ptr(latency * rng.Float64())
		}
		if rng.IntN(4) != 0 {
			rec.TPOTMs = ptr(float64(rng.IntN(50)))
		}
		if rng.IntN(3) == 0 {
			rec.TimelineDriftMs = ptr(round(rng.NormFloat64() * 40))
		}
		records = append(records, rec)
	}
	var opts analysis.Options
	opts.DurationSeconds = []float64{0, horizon, horizon / 2, 200.5}[rng.IntN(4)]
	var schedule []float64
	if rng.IntN(3) == 0 {
		for _, r := range records {
			schedule = append(schedule, r.ScheduledAtSeconds)
		}
		for range rng.IntN(20) { // planned but never sent
			schedule = append(schedule, round(rng.Float64()*horizon*1.2))
		}
		opts.Schedule = slices.Values(schedule)
		scheduled := int64(len(schedule))
		opts.ScheduledRequests = &scheduled
		opts.NotReleased = map[string]int64{"after_duration": scheduled - int64(len(records)), "run_ended": 0}
	}
	if rng.IntN(2) == 0 {
		opts.SLO = &analysis.SLO{TTFTSeconds: rng.Float64() * horizon / 20, TPOTSeconds: float64(rng.IntN(3)) * 0.02, ErrorRatePercent: float64(rng.IntN(3)) * 10}
	}
	return records, opts, schedule
}

// naiveSummary computes the summary straight from the definitions over the whole record list.
func naiveSummary(records []loadgen.Record, opts analysis.Options, schedule []float64) analysis.Summary {
	succeeded := func(r loadgen.Record) bool {
		return r.Successful && (r.Error == nil || *r.Error == "") && r.StatusCode != nil && *r.StatusCode >= 200 && *r.StatusCode <= 299
	}
	pct := func(part, whole int) float64 {
		if whole == 0 {
			return 0
		}
		return float64(part) / float64(whole) * 100
	}
	rank := func(sorted []float64, p float64) float64 {
		i := int(math.Ceil(float64(len(sorted))*p/100)) - 1
		return sorted[min(len(sorted)-1, max(0, i))]
	}
	dist := func(values []float64) *analysis.Distribution {
		if len(values) == 0 {
			return nil
		}
		sum := 0.0
		for _, v := range values {
			sum += v
		}
		sorted := slices.Clone(values)
		sort.Float64s(sorted)
		return &analysis.Distribution{Count: int64(len(values)), MeanMs: sum / float64(len(values)),
			P50Ms: rank(sorted, 50), P90Ms: rank(sorted, 90), P95Ms: rank(sorted, 95), P99Ms: rank(sorted, 99),
			MinMs: sorted[0], MaxMs: sorted[len(sorted)-1]}
	}
	good := func(r loadgen.Record) bool {
		if opts.SLO == nil || !succeeded(r) {
			return false
		}
		if opts.SLO.TTFTSeconds > 0 && (r.TTFTMs == nil || *r.TTFTMs > opts.SLO.TTFTSeconds*1000) {
			return false
		}
		return opts.SLO.TPOTSeconds == 0 || r.TPOTMs == nil || *r.TPOTMs <= opts.SLO.TPOTSeconds*1000
	}

	var s analysis.Summary
	n := len(records)
	var successful, noStatus, nGood int
	var latencies, ttfts, tpots, drifts, timelineDrifts []float64
	firstStart, lastCompletion := math.Inf(1), 0.0
	var inputTokens, outputTokens, latencySeconds float64
	codes := map[int]int{}
	for _, r := range records {
		inputTokens += r.InputTokens
		outputTokens += r.OutputTokens
		latencySeconds += r.LatencyMs / 1000
		firstStart = min(firstStart, r.StartedAtSeconds)
		lastCompletion = max(lastCompletion, r.CompletedAtSeconds)
		drifts = append(drifts, math.Round((r.StartedAtSeconds-r.ScheduledAtSeconds)*1e9)/1e6)
		if r.TimelineDriftMs != nil {
			timelineDrifts = append(timelineDrifts, *r.TimelineDriftMs)
		}
		if r.StatusCode == nil {
			noStatus++
		} else {
			codes[*r.StatusCode]++
		}
		if good(r) {
			nGood++
		}
		if !succeeded(r) {
			continue
		}
		successful++
		latencies = append(latencies, r.LatencyMs)
		if r.TTFTMs != nil {
			ttfts = append(ttfts, *r.TTFTMs)
		}
		if r.TPOTMs != nil {
			tpots = append(tpots, *r.TPOTMs)
		}
	}
	window := 0.0
	if n > 0 {
		window = lastCompletion - firstStart
	}
	rate := func(v float64) float64 {
		if window <= 0 {
			return 0
		}
		return v / window
	}
	s.TotalRequests, s.SuccessfulRequests, s.FailedRequests = int64(n), int64(successful), int64(n-successful)
	s.SentRequests, s.NotReleasedByReason = int64(n), map[string]int64{}
	if opts.ScheduledRequests != nil {
		scheduled, notReleased := *opts.ScheduledRequests, *opts.ScheduledRequests-int64(n)
		s.ScheduledRequests, s.NotReleasedRequests = &scheduled, &notReleased
		if notReleased > 0 {
			s.NotReleasedByReason["after_duration"] = notReleased
		}
	}
	s.SessionTimelineDrift = dist(timelineDrifts)
	s.SuccessRate, s.RequestErrorRate = pct(successful, n), pct(n-successful, n)
	s.DurationSeconds = opts.DurationSeconds
	if s.DurationSeconds == 0 {
		s.DurationSeconds = window
	} else {
		s.ConfiguredDurationSeconds = ptr(opts.DurationSeconds)
	}
	s.MeasuredDurationSeconds = window
	s.FailureCauses = naiveFailureCauses(records, n-successful, succeeded)
	s.ThroughputRPS, s.ThroughputTPS = rate(float64(n)), rate(outputTokens)
	s.TotalInputTokens, s.TotalOutputTokens = inputTokens, outputTokens
	s.InputThroughputTPS, s.TotalThroughputTPS = rate(inputTokens), rate(inputTokens+outputTokens)
	s.EffectiveConcurrency = rate(latencySeconds)
	s.ClientErrorRequests = int64(noStatus)
	s.Latency, s.TTFT, s.TPOT = dist(latencies), dist(ttfts), dist(tpots)
	if n > 0 {
		sort.Float64s(drifts)
		s.Drift = &analysis.Drift{P50Ms: rank(drifts, 50), P90Ms: rank(drifts, 90), P99Ms: rank(drifts, 99)}
	}
	s.StatusCodeBreakdown = []analysis.StatusCodeCount{}
	var sortedCodes []int
	for code := range codes {
		sortedCodes = append(sortedCodes, code)
	}
	sort.Ints(sortedCodes)
	for _, code := range sortedCodes {
		s.StatusCodeBreakdown = append(s.StatusCodeBreakdown, analysis.StatusCodeCount{StatusCode: ptr(code), Count: int64(codes[code]), Percentage: pct(codes[code], n)})
	}
	if noStatus > 0 {
		s.StatusCodeBreakdown = append(s.StatusCodeBreakdown, analysis.StatusCodeCount{Count: int64(noStatus), Percentage: pct(noStatus, n)})
	}

	// Timelines: one span for all.
	arrivalTimes := schedule
	if opts.Schedule == nil {
		arrivalTimes = nil
		for _, r := range records {
			arrivalTimes = append(arrivalTimes, r.ScheduledAtSeconds)
		}
	}
	span := opts.DurationSeconds
	for _, r := range records {
		span = max(span, r.CompletedAtSeconds, r.StartedAtSeconds, r.ScheduledAtSeconds)
	}
	for _, at := range arrivalTimes {
		span = max(span, at)
	}
	s.CompletionTimeline, s.LatencyTimeline, s.TTFTTimeline, s.TPOTTimeline = []analysis.CompletionBin{}, []analysis.LatencyBin{}, []analysis.LatencyBin{}, []analysis.LatencyBin{}
	s.ThroughputTimeline, s.ErrorTimeline = []analysis.ThroughputBin{}, []analysis.ErrorBin{}
	s.GoodputTimeline = []analysis.GoodputBin{}
	if opts.SLO != nil {
		s.Goodput = &analysis.Goodput{GoodRequests: int64(nGood), GoodRequestPercent: pct(nGood, n), GoodputRPS: rate(float64(nGood))}
		if opts.SLO.TTFTSeconds > 0 {
			s.Goodput.TTFTSLOMs = ptr(opts.SLO.TTFTSeconds * 1000)
		}
		if opts.SLO.TPOTSeconds > 0 {
			s.Goodput.TPOTSLOMs = ptr(opts.SLO.TPOTSeconds * 1000)
		}
		if opts.SLO.ErrorRatePercent > 0 {
			s.Goodput.ErrorRateSLOPercent = ptr(opts.SLO.ErrorRatePercent)
			s.Goodput.ErrorRateSLOMet = ptr(s.RequestErrorRate <= opts.SLO.ErrorRatePercent)
		}
	}
	if n == 0 && len(arrivalTimes) == 0 {
		return s
	}
	span = max(span, 0.001)
	bins := min(120, int(math.Ceil(span)))
	width := span / float64(bins)
	bin := func(at float64) int { return min(bins-1, int(at/width)) }
	edges := func(i int) (float64, float64) {
		if i == bins-1 {
			return float64(i) * width, span
		}
		return float64(i) * width, float64(i+1) * width
	}
	arrivedBySchedule := make([]int64, bins)
	for _, at := range arrivalTimes {
		arrivedBySchedule[bin(at)]++
	}
	sentBy := make([]int64, bins)
	latencyBins, ttftBins, tpotBins := make([][]float64, bins), make([][]float64, bins), make([][]float64, bins)
	type completion struct {
		ok, noStatus, good bool
		tokens             float64
	}
	completedBy := make([][]completion, bins)
	for _, r := range records {
		b := bin(r.StartedAtSeconds)
		sentBy[b]++
		if succeeded(r) {
			latencyBins[b] = append(latencyBins[b], r.LatencyMs)
			if r.TTFTMs != nil {
				ttftBins[b] = append(ttftBins[b], *r.TTFTMs)
			}
			if r.TPOTMs != nil {
				tpotBins[b] = append(tpotBins[b], *r.TPOTMs)
			}
		}
		c := bin(r.CompletedAtSeconds)
		completedBy[c] = append(completedBy[c], completion{succeeded(r), r.StatusCode == nil, good(r), r.OutputTokens})
	}
	latencyTimeline := func(values [][]float64) []analysis.LatencyBin {
		out := []analysis.LatencyBin{}
		for i, vs := range values {
			start, end := edges(i)
			lb := analysis.LatencyBin{StartSeconds: start, EndSeconds: end, RequestCount: int64(len(vs)), RequestArrivalRPS: float64(sentBy[i]) / width}
			if len(vs) > 0 {
				sum := 0.0
				for _, v := range vs {
					sum += v
				}
				sorted := slices.Clone(vs)
				sort.Float64s(sorted)
				lb.AverageLatencyMs, lb.P95LatencyMs = ptr(sum/float64(len(vs))), ptr(rank(sorted, 95))
			}
			out = append(out, lb)
		}
		return out
	}
	s.LatencyTimeline, s.TTFTTimeline, s.TPOTTimeline = latencyTimeline(latencyBins), latencyTimeline(ttftBins), latencyTimeline(tpotBins)
	var cumArrived, cumCompleted, cumFailed int64
	for i, cs := range completedBy {
		start, end := edges(i)
		cb := analysis.CompletionBin{StartSeconds: start, EndSeconds: end, ArrivedRequests: arrivedBySchedule[i], CompletedRequests: int64(len(cs))}
		tb := analysis.ThroughputBin{StartSeconds: start, EndSeconds: end, Arrived: sentBy[i], Completed: int64(len(cs))}
		gb := analysis.GoodputBin{StartSeconds: start, EndSeconds: end, CompletedRequests: int64(len(cs))}
		for _, c := range cs {
			tb.OutputTokens += c.tokens
			switch {
			case c.ok:
				cb.SuccessfulRequests++
			case c.noStatus:
				cb.FailedRequests++
				cb.ClientTimeoutRequests++
			default:
				cb.FailedRequests++
				cb.BackendErrorRequests++
			}
			if c.good {
				gb.GoodRequests++
			}
		}
		cumArrived += cb.ArrivedRequests
		cumCompleted += cb.CompletedRequests
		cumFailed += cb.FailedRequests
		cb.CumulativeArrived, cb.CumulativeCompleted = cumArrived, cumCompleted
		tb.RequestArrivalRPS, tb.RequestCompletionRPS, tb.TokenThroughputTPS = float64(tb.Arrived)/width, float64(tb.Completed)/width, tb.OutputTokens/width
		s.CompletionTimeline = append(s.CompletionTimeline, cb)
		s.ThroughputTimeline = append(s.ThroughputTimeline, tb)
		s.ErrorTimeline = append(s.ErrorTimeline, analysis.ErrorBin{StartSeconds: start, EndSeconds: end, FailedRequests: cb.FailedRequests, ErrorRatePercent: pct(int(cb.FailedRequests), len(cs)), CumulativeFailures: cumFailed})
		if opts.SLO != nil {
			gb.RequestThroughputRPS, gb.GoodputRPS = float64(gb.CompletedRequests)/width, float64(gb.GoodRequests)/width
			s.GoodputTimeline = append(s.GoodputTimeline, gb)
		}
	}
	return s
}

// naiveFailureCauses groups the failed records by status and digit-folded error, most frequent
// first (ties: first seen first), the top five.
func naiveFailureCauses(records []loadgen.Record, failed int, success func(loadgen.Record) bool) []analysis.FailureCause {
	type key struct {
		status int
		msg    string
	}
	digits := regexp.MustCompile(`[0-9]+`)
	counts := map[key]int{}
	var order []key
	for _, r := range records {
		if success(r) {
			continue
		}
		k := key{status: -1}
		if r.StatusCode != nil {
			k.status = *r.StatusCode
		}
		if r.Error != nil {
			k.msg = digits.ReplaceAllString(*r.Error, "N")
		}
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	sort.SliceStable(order, func(i, j int) bool { return counts[order[i]] > counts[order[j]] })
	out := []analysis.FailureCause{}
	for _, k := range order[:min(len(order), analysis.MaxFailureCauses)] {
		c := analysis.FailureCause{Message: k.msg, Count: int64(counts[k]), Percentage: float64(counts[k]) / float64(failed) * 100}
		if k.status >= 0 {
			c.StatusCode = ptr(k.status)
		}
		out = append(out, c)
	}
	return out
}
