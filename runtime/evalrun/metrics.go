package evalrun

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/loadgen"
)

// maxPooledGaps bounds the chunk gaps a builder keeps for its chunk_gap distribution; past it
// the gaps are a uniform reservoir sample (exact below it).
const maxPooledGaps = 1 << 20

// maxSharedGaps bounds the gaps a Samples keeps for all its builders. Below it every builder's
// reservoir is computed when its metrics are, from the shared gaps; past it each builder keeps
// its own reservoir from there on, as a lone builder does.
const maxSharedGaps = 2 * maxPooledGaps

// Samples holds the per-request numbers of a run once, for all the builders fed from it (the
// run's, each matrix point's and each stage's): a builder keeps only the rows it was given.
// Three builders fed the same 100,000 records used to keep three copies (~40-80 MB with the
// inter-token gaps); now they keep one, plus 4 bytes per row and builder. The metrics are the
// same, byte for byte: a builder reads its rows back in the order they came.
type Samples struct {
	// Per row (one measured request): the schedule delay, and for successful requests the
	// rest; ttft and tpot are NaN when the record had none (records never hold NaN).
	delay, latency, inTok, outTok, ttft, tpot column[float64]
	ok                                        column[bool]
	// gapEnd[row] is where the row's gaps end in gaps (they start at the previous row's end);
	// empty once the shared gaps were given up (shared false).
	gapEnd   column[int64]
	gaps     column[float64]
	shared   bool
	builders []*Builder
}

// columnChunk is how many values a column holds per chunk (32 KiB of float64).
const columnChunk = 1 << 12

// column is an append-only sequence kept in fixed chunks: it grows without copying what it
// holds, so a 100,000-request run's numbers never exist twice while a slice doubles, and the
// heap holds no block of tens of MB that only the next collection frees.
type column[T any] struct {
	chunks [][]T
	n      int
}

func (c *column[T]) add(v T) {
	if c.n%columnChunk == 0 {
		c.chunks = append(c.chunks, make([]T, 0, columnChunk))
	}
	last := &c.chunks[len(c.chunks)-1]
	*last = append(*last, v)
	c.n++
}

func (c *column[T]) at(i int) T { return c.chunks[i/columnChunk][i%columnChunk] }

// NewSamples returns an empty set of per-request numbers.
func NewSamples() *Samples { return &Samples{shared: true} }

// Builder turns per-request records into the metrics block of reference/lens-evaluation.md §5.
// It keeps a few numbers per request (never the records), in its Samples, so a 100,000-request
// run costs a few MB. Distributions are over successful requests, as inference-perf reports
// them; percentiles interpolate linearly between order statistics (numpy's default, which
// inference-perf uses).
//
// Two inter-token quantities are kept apart. itl is the per-token decode interval of each
// request, (latency - TTFT) / (output tokens - 1): what a user waits per token once the first
// arrived, whatever the server's chunking. chunk_gap is the distribution of the gaps between
// the content chunks the client read (vLLM's bench_serving calls these ITL): a server that
// coalesces several tokens into one write, or a stream read in bursts, gives gaps near 0 ms
// there, which says how the stream was delivered but nothing about decode speed, so it is never
// the headline.
type Builder struct {
	samples *Samples
	rows    []int32 // the rows of samples this builder was given, in order
	// own is the builder's own gap reservoir once samples gave up the shared gaps.
	own      []float64
	gapsSeen int64
	rng      *rand.Rand

	successes, failures, emptyOutputs int64
	good                              int64
	totalIn, totalOut                 float64
	// spans are the first send and last completion of each repetition the builder counted
	// (by index): the repetitions of a run follow one another, so a builder's benchmark time is
	// the sum of its spans, never the gaps between them.
	spans       []span
	scheduled   int64
	constraints map[string]float64 // ms, by metric
}

// NewBuilder returns an empty builder with samples of its own; targets' TTFT/TPOT limits define
// SLO goodput.
func NewBuilder(targets *events.SLATargets) *Builder { return NewSamples().NewBuilder(targets) }

// NewBuilder returns an empty builder reading its requests' numbers from s.
func (s *Samples) NewBuilder(targets *events.SLATargets) *Builder {
	b := &Builder{samples: s, constraints: map[string]float64{}}
	if targets != nil {
		if targets.TTFTMs != nil {
			b.constraints["ttft"] = *targets.TTFTMs
		}
		if targets.TPOTMs != nil {
			b.constraints["tpot"] = *targets.TPOTMs
		}
	}
	s.builders = append(s.builders, b)
	return b
}

// Add takes one measured request's record and its inter-token gaps (ms; may be nil) for b.
// Feed records that several builders count through their Samples' Add instead, once.
func (b *Builder) Add(rec loadgen.Record, gaps []float64) { b.samples.Add(rec, gaps, b) }

// Add stores one measured request's numbers once and gives the row to each of builders (all of
// them made from s).
func (s *Samples) Add(rec loadgen.Record, gaps []float64, builders ...*Builder) {
	row := int32(s.delay.n)
	nan := math.NaN()
	ttft, tpot := nan, nan
	if rec.TTFTMs != nil {
		ttft = *rec.TTFTMs
	}
	if rec.TPOTMs != nil {
		tpot = *rec.TPOTMs
	}
	s.delay.add(1000 * (rec.StartedAtSeconds - rec.ScheduledAtSeconds))
	s.ok.add(rec.Successful)
	if rec.Successful {
		s.latency.add(rec.LatencyMs)
		s.inTok.add(rec.InputTokens)
		s.outTok.add(rec.OutputTokens)
		s.ttft.add(ttft)
		s.tpot.add(tpot)
	} else {
		for _, c := range []*column[float64]{&s.latency, &s.inTok, &s.outTok, &s.ttft, &s.tpot} {
			c.add(nan)
		}
	}
	if !rec.Successful {
		gaps = nil // a failed request's gaps never counted
	}
	if s.shared && int64(s.gaps.n+len(gaps)) > maxSharedGaps {
		s.unshare()
	}
	if s.shared {
		for _, g := range gaps {
			s.gaps.add(g)
		}
		s.gapEnd.add(int64(s.gaps.n))
	}
	for _, b := range builders {
		b.add(row, rec)
		if !s.shared {
			b.pool(gaps)
		}
	}
}

// unshare gives every builder its own reservoir of the gaps so far (as it would hold had it
// kept them itself) and drops the shared gaps.
func (s *Samples) unshare() {
	for _, b := range s.builders {
		b.own, b.gapsSeen, b.rng = b.reservoir()
	}
	s.shared, s.gaps, s.gapEnd = false, column[float64]{}, column[int64]{}
}

// add counts row (rec's numbers) in b.
func (b *Builder) add(row int32, rec loadgen.Record) {
	b.rows = append(b.rows, row)
	b.scheduled++
	rep := Repetition(rec)
	for len(b.spans) <= rep {
		b.spans = append(b.spans, span{first: math.Inf(1), last: math.Inf(-1)})
	}
	sp := &b.spans[rep]
	sp.first, sp.last = min(sp.first, rec.StartedAtSeconds), max(sp.last, rec.CompletedAtSeconds)
	if !rec.Successful {
		b.failures++
		return
	}
	b.successes++
	b.totalIn += rec.InputTokens
	b.totalOut += rec.OutputTokens
	if rec.OutputTokens <= 0 {
		b.emptyOutputs++
	}
	if b.isGood(rec) {
		b.good++
	}
}

// pool adds gaps to b's own reservoir: every gap up to maxPooledGaps, then a uniform sample.
func (b *Builder) pool(gaps []float64) {
	if len(b.own)+len(gaps) <= maxPooledGaps { // below the limit every gap is kept
		b.own = append(b.own, gaps...)
		b.gapsSeen += int64(len(gaps))
		return
	}
	for _, g := range gaps {
		b.poolOne(g)
	}
}

func (b *Builder) poolOne(g float64) {
	b.gapsSeen++
	if len(b.own) < maxPooledGaps {
		b.own = append(b.own, g)
		return
	}
	if b.rng == nil {
		b.rng = rand.New(rand.NewPCG(1, 2))
	}
	if j := b.rng.Int64N(b.gapsSeen); j < maxPooledGaps {
		b.own[j] = g
	}
}

// reservoir is the gap reservoir b would have built from its rows' shared gaps, with the count
// and random source to go on with.
func (b *Builder) reservoir() ([]float64, int64, *rand.Rand) {
	r := &Builder{}
	s := b.samples
	gapsOf := func(row int32) (from, to int) {
		if row > 0 {
			from = int(s.gapEnd.at(int(row) - 1))
		}
		return from, int(s.gapEnd.at(int(row)))
	}
	n := 0
	for _, row := range b.rows {
		from, to := gapsOf(row)
		n += to - from
	}
	r.own = make([]float64, 0, min(n, maxPooledGaps)) // grown once, not by doubling
	for _, row := range b.rows {
		from, to := gapsOf(row)
		for from < to { // the row's gaps, chunk by chunk
			chunk := s.gaps.chunks[from/columnChunk]
			k := from % columnChunk
			end := min(len(chunk), k+to-from)
			r.pool(chunk[k:end])
			from += end - k
		}
	}
	return r.own, r.gapsSeen, r.rng
}

// chunkGaps is the gaps between content chunks b's chunk_gap distribution is over, in a slice
// of their own.
func (b *Builder) chunkGaps() []float64 {
	if !b.samples.shared {
		return slices.Clone(b.own)
	}
	gaps, _, _ := b.reservoir()
	return gaps
}

func (b *Builder) isGood(rec loadgen.Record) bool {
	if rec.OutputTokens <= 0 {
		return false
	}
	if limit, ok := b.constraints["ttft"]; ok && (rec.TTFTMs == nil || *rec.TTFTMs > limit) {
		return false
	}
	if limit, ok := b.constraints["tpot"]; ok && rec.TPOTMs != nil && *rec.TPOTMs > limit {
		return false
	}
	return true
}

// Count is the number of requests added.
func (b *Builder) Count() int64 { return b.scheduled }

// Metrics is a metrics block: a JSON object whose keys follow §5.
type Metrics map[string]any

// Float returns a numeric metric (false when absent or null).
func (m Metrics) Float(key string) (float64, bool) {
	v, ok := m[key].(float64)
	return v, ok
}

// span is the window of one repetition's requests in a builder.
type span struct{ first, last float64 }

// Repetition is the repetition a record belongs to (its metadata's "repetition"; 0 without).
func Repetition(rec loadgen.Record) int {
	switch v := rec.Metadata["repetition"].(type) {
	case int:
		return max(v, 0)
	case float64:
		return max(int(v), 0)
	}
	return 0
}

// elapsed is the builder's benchmark time: the sum of its repetitions' spans.
func (b *Builder) elapsed() float64 {
	total := 0.0
	for _, sp := range b.spans {
		if sp.last >= sp.first {
			total += sp.last - sp.first
		}
	}
	return total
}

// window is the first send and last completion over every span.
func (b *Builder) window() (first, last float64) {
	first, last = math.Inf(1), math.Inf(-1)
	for _, sp := range b.spans {
		first, last = min(first, sp.first), max(last, sp.last)
	}
	return first, last
}

// Metrics computes the metrics block. source names where the records are (the artifact).
func (b *Builder) Metrics(artifactPath string) Metrics {
	count := b.successes + b.failures
	elapsed := 0.0
	if count > 0 {
		elapsed = b.elapsed()
	}
	rate := func(x float64) any {
		if elapsed <= 0 {
			return nil
		}
		return round(x/elapsed, 3)
	}
	m := Metrics{
		"throughput_tps":          rate(b.totalOut),
		"input_throughput_tps":    rate(b.totalIn),
		"total_throughput_tps":    rate(b.totalIn + b.totalOut),
		"throughput_rps":          rate(float64(b.successes)),
		"total_input_tokens":      b.totalIn,
		"total_output_tokens":     b.totalOut,
		"success_count":           b.successes,
		"failure_count":           b.failures,
		"request_count":           count,
		"scheduled_request_count": b.scheduled,
		"benchmark_time_seconds":  round(elapsed, 3),
		"success_rate":            nil,
		"error_rate":              nil,
	}
	if count > 0 {
		m["success_rate"] = round(100*float64(b.successes)/float64(count), 3)
		m["error_rate"] = round(100*float64(b.failures)/float64(count), 3)
	}
	v := b.values() // fresh slices, which the distributions may reorder
	dists := map[string]any{}
	for name, values := range map[string][]float64{"request_latency": v.latency, "ttft": v.ttft, "itl": v.itl, "tpot": v.tpot,
		"ntpot": v.ntpot, "chunk_gap": b.chunkGaps()} {
		d := distributionOf(values, "_ms")
		dists[name] = d
		scalar := name + "_ms"
		if p50, ok := d["p50_ms"]; ok {
			m[scalar] = p50
		} else {
			m[scalar] = nil
		}
	}
	m["latency_distributions"] = dists
	m["token_distributions"] = map[string]any{"input": distributionOf(v.inTok, ""), "output": distributionOf(v.outTok, "")}
	m["schedule_delay"] = distributionOf(v.delay, "_ms")
	m["request_slo_goodput"] = b.goodput(elapsed, artifactPath)
	return m
}

// builderValues are a builder's numbers, gathered from its rows in the order they came.
type builderValues struct {
	latency, ttft, tpot, itl, ntpot, inTok, outTok, delay []float64
}

func (b *Builder) values() builderValues {
	s := b.samples
	v := builderValues{delay: make([]float64, 0, len(b.rows))}
	n := int(b.successes)
	v.latency, v.inTok, v.outTok = make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n)
	v.ttft, v.tpot, v.itl, v.ntpot = make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n)
	for _, r := range b.rows {
		row := int(r)
		v.delay = append(v.delay, s.delay.at(row))
		if !s.ok.at(row) {
			continue
		}
		latency, out := s.latency.at(row), s.outTok.at(row)
		v.latency = append(v.latency, latency)
		v.inTok = append(v.inTok, s.inTok.at(row))
		v.outTok = append(v.outTok, out)
		if out > 0 {
			v.ntpot = append(v.ntpot, latency/out)
		}
		if t := s.ttft.at(row); !math.IsNaN(t) {
			v.ttft = append(v.ttft, t)
			if out >= 2 {
				v.itl = append(v.itl, (latency-t)/(out-1))
			}
		}
		if t := s.tpot.at(row); !math.IsNaN(t) {
			v.tpot = append(v.tpot, t)
		}
	}
	return v
}

func (b *Builder) goodput(elapsed float64, artifactPath string) map[string]any {
	count := b.successes + b.failures
	if count == 0 || elapsed <= 0 {
		return map[string]any{"schema_version": 1, "status": "unavailable", "reason": "no request completed in the measured window"}
	}
	first, last := b.window()
	constraints := map[string]float64{}
	for k, v := range b.constraints {
		constraints[k] = v / 1000
	}
	return map[string]any{
		"schema_version": 1, "status": "measured", "value": round(float64(b.good)/elapsed, 6),
		"good_requests": b.good, "request_count": count, "success_count": b.successes,
		"empty_output_count": b.emptyOutputs, "duration_seconds": round(elapsed, 3),
		"constraints_seconds": constraints, "window": map[string]float64{"start": first, "end": last},
		"source": "per-request records", "artifact_path": artifactPath,
		"formula": "successful requests with output whose TTFT and TPOT meet every configured limit / benchmark_time_seconds",
	}
}

// distributionPercentiles are the percentiles every distribution reports, in ascending order.
var distributionPercentiles = []int{50, 75, 90, 95, 99}

// distribution summarises values: mean, min, max and p50-p99, each key suffixed (e.g. _ms),
// rounded to 3 decimals; empty when there are no values. The percentiles are Percentile's, but
// found by selection rather than a full sort: a run's results are due as soon as its last
// request ends, and sorting the ~1.5 M inter-token gaps of a 100,000-request run once per
// builder (run, matrix point, stage) took ~0.3 s each on a busy 2-core host.
func distribution(values []float64, suffix string) map[string]float64 {
	return distributionOf(slices.Clone(values), suffix)
}

// distributionOf is distribution over work, which it reorders.
func distributionOf(work []float64, suffix string) map[string]float64 {
	d := map[string]float64{}
	if len(work) == 0 {
		return d
	}
	sum, lo, hi := 0.0, work[0], work[0]
	for _, v := range work {
		sum += v
		lo, hi = min(lo, v), max(hi, v)
	}
	d["mean"+suffix] = round(sum/float64(len(work)), 3)
	d["min"+suffix] = round(lo, 3)
	d["max"+suffix] = round(hi, 3)
	from := 0 // work[:from] holds the smallest values, in no order; work[from:] the rest
	for _, p := range distributionPercentiles {
		pos := float64(p) / 100 * float64(len(work)-1)
		k := int(math.Floor(pos))
		selectNth(work[from:], k-from)
		from = k
		v := work[k]
		if frac := pos - float64(k); frac > 0 && k+1 < len(work) {
			next := slices.Min(work[k+1:]) // every value after k is >= work[k]
			v += (next - v) * frac
		}
		d["p"+itoa(p)+suffix] = round(v, 3)
	}
	return d
}

// selectNth reorders v so that v[n] is the value a sort would put there, every value before it
// is <= v[n] and every value after it >= v[n] (quickselect, median-of-three pivots, Hoare
// partitions, which split runs of equal values evenly). After 64 partitions without an end it
// sorts what is left, so no input is quadratic.
func selectNth(v []float64, n int) {
	lo, hi := 0, len(v)-1
	for rounds := 0; lo < hi; rounds++ {
		if rounds == 64 {
			slices.Sort(v[lo : hi+1])
			return
		}
		mid := lo + (hi-lo)/2
		if v[mid] < v[lo] {
			v[mid], v[lo] = v[lo], v[mid]
		}
		if v[hi] < v[lo] {
			v[hi], v[lo] = v[lo], v[hi]
		}
		if v[hi] < v[mid] {
			v[hi], v[mid] = v[mid], v[hi]
		}
		pivot := v[mid]
		i, j := lo, hi
		for i <= j {
			for i < hi && v[i] < pivot {
				i++
			}
			for j > lo && v[j] > pivot {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		// Now v[lo:j+1] <= pivot <= v[i:hi+1], and anything between equals the pivot.
		switch {
		case n <= j:
			hi = j
		case n >= i:
			lo = i
		default:
			return
		}
	}
}

// Percentile is the p-th percentile of sorted values with linear interpolation between the
// closest ranks (numpy.percentile's default method).
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	pos := p / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	frac := pos - float64(lo)
	return sorted[lo] + (sorted[hi]-sorted[lo])*frac
}

func round(x float64, places int) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	scale := math.Pow(10, float64(places))
	return math.Round(x*scale) / scale
}

func itoa(n int) string {
	return string(rune('0'+n/10)) + string(rune('0'+n%10))
}

// EvaluateSLA is the SLA verdict of a metrics block (§5): only the configured targets are
// checked; ttft/tpot read latency_distributions.<m>.<percentile>_ms (default p99).
func EvaluateSLA(m Metrics, t *events.SLATargets) *events.SLAVerdict {
	if t == nil {
		return nil
	}
	v := &events.SLAVerdict{Checks: map[string]events.SLACheck{}}
	dist := func(metric, percentile string) *float64 {
		dists, _ := m["latency_distributions"].(map[string]any)
		switch d := dists[metric].(type) {
		case map[string]float64:
			if x, ok := d[percentile+"_ms"]; ok {
				return &x
			}
		case map[string]any: // a block read back from the store
			if x, ok := d[percentile+"_ms"].(float64); ok {
				return &x
			}
		}
		return nil
	}
	scalar := func(key string) *float64 {
		if x, ok := m.Float(key); ok {
			return &x
		}
		return nil
	}
	check := func(name string, actual *float64, target float64, unit, percentile string, atMost bool) {
		c := events.SLACheck{Actual: actual, Target: target, Unit: unit, Percentile: percentile}
		if actual != nil {
			met := *actual >= target
			margin := *actual - target // how far inside the target: positive when met
			if atMost {
				met, margin = *actual <= target, target-*actual
			}
			c.Met, c.Margin = &met, ptr(round(margin, 3))
			if target != 0 {
				c.MarginPercent = ptr(round(100*margin/target, 3))
			}
		}
		v.Checks[name] = c
	}
	pct := func(p *string) string {
		if p == nil {
			return "p99"
		}
		return *p
	}
	if t.TTFTMs != nil {
		p := pct(t.TTFTPercentile)
		check("ttft", dist("ttft", p), *t.TTFTMs, "ms", p, true)
	}
	if t.TPOTMs != nil {
		p := pct(t.TPOTPercentile)
		check("tpot", dist("tpot", p), *t.TPOTMs, "ms", p, true)
	}
	if t.ThroughputMinTPS != nil {
		check("throughput", scalar("throughput_tps"), *t.ThroughputMinTPS, "tok/s", "", false)
	}
	if t.SuccessRateMinPercent != nil {
		check("success_rate", scalar("success_rate"), *t.SuccessRateMinPercent, "%", "", false)
	}
	anyFalse, allTrue := false, len(v.Checks) > 0
	for _, c := range v.Checks {
		switch {
		case c.Met == nil:
			allTrue = false
		case !*c.Met:
			anyFalse, allTrue = true, false
		}
	}
	switch {
	case anyFalse:
		v.Met = ptr(false)
	case allTrue:
		v.Met = ptr(true)
	}
	return v
}

// Headline picks the figures a finished event announces.
func Headline(m Metrics) events.HeadlineMetrics {
	f := func(key string) *float64 {
		if x, ok := m.Float(key); ok {
			return &x
		}
		return nil
	}
	h := events.HeadlineMetrics{SuccessRate: f("success_rate"), ThroughputTPS: f("throughput_tps"), ThroughputRPS: f("throughput_rps"),
		TTFTMs: f("ttft_ms"), TPOTMs: f("tpot_ms"), RequestLatencyMs: f("request_latency_ms")}
	if n, ok := m["request_count"].(int64); ok {
		h.RequestCount = n
	}
	return h
}
