package livesummary

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/DataDog/sketches-go/ddsketch"
)

// RelativeAccuracy is the sketches' guarantee: a reported quantile q is within 1% of the
// value of rank q in the data (DDSketch's relative-error bound), merged or not.
const RelativeAccuracy = 0.01

// maxBins bounds each sketch's memory (2048 bins of 8 bytes). At 1% accuracy 2048 bins span
// values over a ratio of about e^81, so from a microsecond to far beyond a benchmark's longest
// request no bin ever collapses; were one to, the lowest values would lose precision first.
const maxBins = 2048

// WindowSeconds is the span of the recent throughput: the last 30 one-second buckets.
const WindowSeconds = 30

// maxCauses bounds the distinct error causes counted; later new causes count as "other".
const maxCauses = 64

// maxCauseLen bounds one cause's text (error messages may quote whole responses).
const maxCauseLen = 160

// topCauses is how many causes a snapshot lists.
const topCauses = 5

// otherCause collects the causes past maxCauses.
const otherCause = "other causes"

// Observation is what one completed request contributes.
type Observation struct {
	Successful bool
	// TTFTMs, TPOTMs and LatencyMs are the request's times; a negative or NaN value (unknown)
	// is left out of its distribution. Only successful requests enter the distributions.
	TTFTMs, TPOTMs, LatencyMs float64
	OutputTokens              float64
	// Cause names why a failed request failed ("" for a success).
	Cause string
}

// Summary is a live summary of a benchmark's requests in bounded memory: three DDSketches, the
// counts, a ring of one-second buckets for the recent window and at most maxCauses error
// causes. It is not safe for concurrent use.
type Summary struct {
	ttft, tpot, latency *ddsketch.DDSketch
	requests, succeeded int64
	outputTokens        float64
	// first is when the first request completed (Unix seconds; 0: none yet), the start of the
	// overall throughput.
	first   float64
	buckets [WindowSeconds]bucket
	causes  map[string]int64
}

// bucket counts the requests that completed in one second (Unix second sec).
type bucket struct {
	Second       int64   `json:"s"`
	Requests     int64   `json:"r"`
	OutputTokens float64 `json:"t"`
}

// New returns an empty summary.
func New() *Summary {
	return &Summary{ttft: newSketch(), tpot: newSketch(), latency: newSketch(), causes: map[string]int64{}}
}

func newSketch() *ddsketch.DDSketch {
	s, err := ddsketch.LogCollapsingLowestDenseDDSketch(RelativeAccuracy, maxBins)
	if err != nil {
		panic(err) // only for an accuracy outside (0, 1)
	}
	return s
}

// Add counts one request that completed at the given time.
func (s *Summary) Add(o Observation, at time.Time) {
	now := float64(at.UnixNano()) / 1e9
	if s.first == 0 || now < s.first {
		s.first = now
	}
	s.requests++
	s.outputTokens += max(0, o.OutputTokens)
	b := s.bucketAt(at.Unix())
	b.Requests++
	b.OutputTokens += max(0, o.OutputTokens)
	if !o.Successful {
		s.addCause(o.Cause, 1)
		return
	}
	s.succeeded++
	for _, v := range []struct {
		sk *ddsketch.DDSketch
		ms float64
	}{{s.ttft, o.TTFTMs}, {s.tpot, o.TPOTMs}, {s.latency, o.LatencyMs}} {
		if v.ms >= 0 && !math.IsInf(v.ms, 0) {
			_ = v.sk.Add(v.ms) // NaN fails the >= test; a finite non-negative value cannot fail
		}
	}
}

// bucketAt returns the bucket of a Unix second, reusing the slot of a second WindowSeconds ago.
// A second older than the slot's holds nothing the window will show and is dropped.
func (s *Summary) bucketAt(sec int64) *bucket {
	b := &s.buckets[((sec%WindowSeconds)+WindowSeconds)%WindowSeconds]
	if b.Second != sec {
		if b.Second > sec {
			return &bucket{} // older than the window already: counted overall only
		}
		*b = bucket{Second: sec}
	}
	return b
}

func (s *Summary) addCause(cause string, n int64) {
	if cause == "" {
		cause = "unknown error"
	}
	if len(cause) > maxCauseLen {
		cause = cause[:maxCauseLen] + "…"
	}
	if _, ok := s.causes[cause]; !ok && len(s.causes) >= maxCauses {
		cause = otherCause
	}
	s.causes[cause] += n
}

// Merge adds another summary's requests to s: the sketches merge exactly (the result is the
// sketch of the union, with the same accuracy), counts and same-second buckets add up.
func (s *Summary) Merge(o *Summary) error {
	for _, p := range [][2]*ddsketch.DDSketch{{s.ttft, o.ttft}, {s.tpot, o.tpot}, {s.latency, o.latency}} {
		if err := p[0].MergeWith(p[1]); err != nil {
			return err
		}
	}
	s.requests += o.requests
	s.succeeded += o.succeeded
	s.outputTokens += o.outputTokens
	if o.first != 0 && (s.first == 0 || o.first < s.first) {
		s.first = o.first
	}
	s.addCounts(o.buckets[:], o.causes)
	return nil
}

// addCounts adds another summary's seconds and causes.
func (s *Summary) addCounts(buckets []bucket, causes map[string]int64) {
	for _, ob := range buckets {
		if ob.Requests == 0 && ob.OutputTokens == 0 {
			continue
		}
		b := s.bucketAt(ob.Second)
		b.Requests += ob.Requests
		b.OutputTokens += ob.OutputTokens
	}
	for cause, n := range causes {
		s.addCause(cause, n)
	}
}

// Count is how many requests were added.
func (s *Summary) Count() int64 { return s.requests }

// Snapshot is the summary as live_metrics carries it (times in ms, rates per second).
type Snapshot struct {
	Requests   int64   `json:"requests"`
	ErrorRate  float64 `json:"error_rate"`
	TTFTMs     Pcts    `json:"ttft_ms"`
	TPOTMs     Pcts    `json:"tpot_ms"`
	LatencyMs  Pcts    `json:"e2e_latency_ms"`
	Throughput Rates   `json:"throughput"`
	TopErrors  []Cause `json:"top_errors"`
	// RelativeAccuracy states the percentiles' error bound.
	RelativeAccuracy float64 `json:"percentile_relative_accuracy"`
}

// Pcts are the percentiles of one distribution (absent: no successful request measured it).
type Pcts struct {
	P50 *float64 `json:"p50,omitempty"`
	P90 *float64 `json:"p90,omitempty"`
	P99 *float64 `json:"p99,omitempty"`
}

// Rates are the throughputs over the recent window and over the whole run so far.
type Rates struct {
	WindowSeconds             float64 `json:"window_seconds"`
	RequestsPerSecond         float64 `json:"requests_per_second"`
	OutputTokensPerSecond     float64 `json:"output_tokens_per_second"`
	OverallRequestsPerSecond  float64 `json:"overall_requests_per_second"`
	OverallOutputTokensPerSec float64 `json:"overall_output_tokens_per_second"`
}

// Cause is one error cause and how many requests failed with it.
type Cause struct {
	Cause string `json:"cause"`
	Count int64  `json:"count"`
}

// Snapshot reads the summary at now: the window is the WindowSeconds complete and current
// seconds up to now (shorter while the run is younger), the overall rate runs from the first
// completion.
func (s *Summary) Snapshot(now time.Time) Snapshot {
	snap := Snapshot{Requests: s.requests, RelativeAccuracy: RelativeAccuracy, TopErrors: []Cause{},
		TTFTMs: pcts(s.ttft, true), TPOTMs: pcts(s.tpot, false), LatencyMs: pcts(s.latency, false)}
	if s.requests > 0 {
		snap.ErrorRate = round(float64(s.requests-s.succeeded)/float64(s.requests), 4)
	}
	nowSec := now.Unix()
	var req int64
	var tok float64
	for _, b := range s.buckets {
		if b.Second > nowSec-WindowSeconds && b.Second <= nowSec {
			req += b.Requests
			tok += b.OutputTokens
		}
	}
	if s.first != 0 {
		elapsed := max(float64(now.UnixNano())/1e9-s.first, 1) // under a second: per the first second
		window := min(float64(WindowSeconds), elapsed)
		snap.Throughput = Rates{WindowSeconds: round(window, 1),
			RequestsPerSecond: round(float64(req)/window, 3), OutputTokensPerSecond: round(tok/window, 3),
			OverallRequestsPerSecond:  round(float64(s.requests)/elapsed, 3),
			OverallOutputTokensPerSec: round(s.outputTokens/elapsed, 3)}
	}
	for cause, n := range s.causes {
		snap.TopErrors = append(snap.TopErrors, Cause{Cause: cause, Count: n})
	}
	sort.Slice(snap.TopErrors, func(i, j int) bool {
		a, b := snap.TopErrors[i], snap.TopErrors[j]
		return a.Count > b.Count || a.Count == b.Count && a.Cause < b.Cause
	})
	if len(snap.TopErrors) > topCauses {
		snap.TopErrors = snap.TopErrors[:topCauses]
	}
	return snap
}

func pcts(sk *ddsketch.DDSketch, p90 bool) Pcts {
	if sk.IsEmpty() {
		return Pcts{}
	}
	at := func(q float64) *float64 {
		v, err := sk.GetValueAtQuantile(q)
		if err != nil {
			return nil
		}
		v = round(v, 3)
		return &v
	}
	p := Pcts{P50: at(0.5), P99: at(0.99)}
	if p90 {
		p.P90 = at(0.9)
	}
	return p
}

func round(v float64, digits int) float64 {
	f := math.Pow(10, float64(digits))
	return math.Round(v*f) / f
}

// wire is the summary's stored form (a worker's record carries it for the owner to merge).
type wire struct {
	TTFT         []byte           `json:"ttft"`
	TPOT         []byte           `json:"tpot"`
	Latency      []byte           `json:"latency"`
	Requests     int64            `json:"requests"`
	Succeeded    int64            `json:"succeeded"`
	OutputTokens float64          `json:"output_tokens"`
	First        float64          `json:"first"`
	Buckets      []bucket         `json:"buckets,omitempty"`
	Causes       map[string]int64 `json:"causes,omitempty"`
}

// MarshalJSON encodes the whole summary (sketches in DDSketch's own binary encoding), so that a
// decoded copy merges exactly like the original.
func (s *Summary) MarshalJSON() ([]byte, error) {
	w := wire{Requests: s.requests, Succeeded: s.succeeded, OutputTokens: s.outputTokens, First: s.first, Causes: s.causes}
	s.ttft.Encode(&w.TTFT, false)
	s.tpot.Encode(&w.TPOT, false)
	s.latency.Encode(&w.Latency, false)
	for _, b := range s.buckets {
		if b.Requests != 0 || b.OutputTokens != 0 {
			w.Buckets = append(w.Buckets, b)
		}
	}
	return json.Marshal(w)
}

// maxWireBuckets bounds the buckets a decoded summary may hold (maxCauses+1 its causes): a
// stored summary is data from another process and gets the same bounds as one built here.
const maxWireBuckets = WindowSeconds

// UnmarshalJSON decodes MarshalJSON's form into s (replacing what it held). Bytes that are no
// sketch are an error, never a panic: the sketch decoder is not hardened against them.
func (s *Summary) UnmarshalJSON(raw []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("live summary: undecodable sketch: %v", p)
		}
	}()
	var w wire
	if err := json.Unmarshal(raw, &w); err != nil {
		return err
	}
	if len(w.Buckets) > maxWireBuckets || len(w.Causes) > maxCauses+1 {
		return fmt.Errorf("live summary: %d buckets and %d causes exceed the bounds (%d, %d)", len(w.Buckets), len(w.Causes), maxWireBuckets, maxCauses+1)
	}
	if w.Requests < 0 || w.Succeeded < 0 || w.Succeeded > w.Requests {
		return fmt.Errorf("live summary: counts %d of %d are not possible", w.Succeeded, w.Requests)
	}
	fresh := New()
	for _, p := range []struct {
		name string
		sk   *ddsketch.DDSketch
		raw  []byte
	}{{"ttft", fresh.ttft, w.TTFT}, {"tpot", fresh.tpot, w.TPOT}, {"latency", fresh.latency, w.Latency}} {
		if len(p.raw) == 0 {
			continue
		}
		if err := p.sk.DecodeAndMergeWith(p.raw); err != nil {
			return fmt.Errorf("live summary: %s sketch: %v", p.name, err)
		}
	}
	fresh.requests, fresh.succeeded, fresh.outputTokens, fresh.first = w.Requests, w.Succeeded, w.OutputTokens, w.First
	fresh.addCounts(w.Buckets, w.Causes)
	*s = *fresh
	return nil
}

// CauseOf names a failed request's cause for the error list: its error text, else its HTTP
// status.
func CauseOf(errText string, status *int) string {
	switch {
	case errText != "":
		return errText
	case status != nil:
		return "HTTP " + strconv.Itoa(*status)
	}
	return ""
}
