package evalrun

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/lensfn/lensfn/events"
)

// PhaseBounds are one invocation's estimated seconds.
type PhaseBounds struct {
	LowerSeconds int `json:"lower_seconds"`
	UpperSeconds int `json:"upper_seconds"`
}

// Phases is the estimate's phase map; it keeps insertion order when encoded (matrix-0 …
// matrix-n, then warmup), as the reference does.
type Phases struct {
	names  []string
	bounds map[string]PhaseBounds
}

func (p *Phases) add(name string, b PhaseBounds) {
	if p.bounds == nil {
		p.bounds = map[string]PhaseBounds{}
	}
	if _, ok := p.bounds[name]; !ok {
		p.names = append(p.names, name)
	}
	p.bounds[name] = b
}

// Len is the number of phases.
func (p Phases) Len() int { return len(p.names) }

// Get returns a phase's bounds.
func (p Phases) Get(name string) (PhaseBounds, bool) {
	b, ok := p.bounds[name]
	return b, ok
}

// Names lists the phases in order.
func (p Phases) Names() []string { return append([]string(nil), p.names...) }

// MarshalJSON encodes the phases as an object in insertion order.
func (p Phases) MarshalJSON() ([]byte, error) {
	out := []byte{'{'}
	for i, name := range p.names {
		if i > 0 {
			out = append(out, ',')
		}
		key, _ := marshal(name)
		val, _ := marshal(p.bounds[name])
		out = append(append(append(out, key...), ':'), val...)
	}
	return append(out, '}'), nil
}

// UnmarshalJSON reads stored phases, keeping their order.
func (p *Phases) UnmarshalJSON(b []byte) error {
	*p = Phases{}
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		if tok == nil && err == nil {
			return nil // null: no phases
		}
		return fmt.Errorf("evalrun: timing phases are not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := tok.(string)
		var bounds PhaseBounds
		if err := dec.Decode(&bounds); err != nil {
			return err
		}
		p.add(name, bounds)
	}
	_, err := dec.Token()
	return err
}

// Timing is the BenchmarkTimingResponse (fields in the reference's order).
type Timing struct {
	Basis                     string  `json:"basis"`
	Confidence                string  `json:"confidence"`
	MeasuredRequests          *int    `json:"measured_requests"`
	LowerSeconds              *int    `json:"lower_seconds"`
	UpperSeconds              *int    `json:"upper_seconds"`
	Phases                    Phases  `json:"phases"`
	TimeoutMode               string  `json:"timeout_mode"`
	TimeoutSeconds            int     `json:"timeout_seconds"`
	RecommendedTimeoutSeconds int     `json:"recommended_timeout_seconds"`
	TimeoutWarning            *string `json:"timeout_warning"`
	Assumptions               string  `json:"assumptions"`
}

// Timing constants of the estimate (reference/lens-evaluation.md §1).
const (
	// FallbackTimeoutSeconds is the automatic timeout of a workload whose timing is unknown.
	FallbackTimeoutSeconds = 7200
	MinAutoTimeoutSeconds  = 900
	MaxTimeoutSeconds      = 14400
	// sharedPrefixConcurrency is the generated shared-prefix workload's in-flight cap
	// (worker_max_concurrency: 8).
	sharedPrefixConcurrency = 8

	timeoutWarning   = "The timeout may expire before this workload finishes."
	knownAssumptions = "Rough configuration estimate, not measured hardware speed. Includes 2-5 minutes of harness setup " +
		"per invocation; excludes deployment, runtime installation and final analysis. " +
		"Assumes aggregate input/output rates of 2000/200 tokens per second and per-request rates of " +
		"1000/20, with a fourfold faster lower bound. Cache reuse and hardware may change actual time."
	unknownAssumptions = "Timing unavailable for this workload; automatic timeout uses a 2-hour fallback."
)

// Estimate is the timing estimate of a benchmark spec: a pure function of the configuration.
// Supported are generated single-turn shared-prefix workloads and explicit matrix x
// concurrency-stage workloads of inference-perf; everything else is unknown, with the 2-hour
// fallback. wait_timeout_seconds, when set, is a manual hard limit.
func Estimate(spec events.BenchmarkSpec) Timing {
	d := WithDefaults(spec)
	parallelism := float64(*d.Parallelism)
	var phases Phases
	requests := 0
	stageSeconds := func(count int, inTok, outTok float64, concurrency int, duration float64) float64 {
		n := float64(count)
		aggregate := n * parallelism * (inTok/2000 + outTok/200)
		serial := math.Ceil(n/float64(concurrency)) * (inTok/1000 + outTok/20)
		return max(duration, aggregate, serial)
	}
	phase := func(name string, seconds, minimum float64) {
		phases.add(name, PhaseBounds{
			LowerSeconds: int(math.Ceil(120 + max(minimum, seconds/4))),
			UpperSeconds: int(math.Ceil(300 + seconds)),
		})
	}
	prefix := d.SharedPrefix
	switch {
	case *d.Harness == HarnessInferencePerf && prefix != nil && (prefix.EnableMultiTurnChat == nil || !*prefix.EnableMultiTurnChat):
		seconds, window := 0.0, 0.0
		inTok := float64(prefix.SystemPromptLen + prefix.QuestionLen)
		for _, st := range prefix.Stages {
			count := int(st.Rate * st.Duration) // truncation toward zero, as the reference does
			requests += count * *d.Parallelism
			seconds += stageSeconds(count, inTok, float64(prefix.OutputLen), sharedPrefixConcurrency, st.Duration)
			window += st.Duration
		}
		phase(PhaseBenchmark, seconds, window)
	case *d.Harness == HarnessInferencePerf && len(spec.Matrix) > 0 && len(spec.ConcurrencyStages) > 0:
		// Only explicit stages: the defaults used at execution do not make the timing known.
		for i, point := range spec.Matrix {
			seconds := 0.0
			for _, st := range spec.ConcurrencyStages {
				requests += st.NumRequests * *d.Parallelism
				seconds += stageSeconds(st.NumRequests, float64(point.ISL), float64(point.OSL), st.Concurrency, 0)
			}
			phase(PhaseMatrix(i), seconds, 0)
		}
		if w := *d.WarmupRequests; w > 0 {
			point := spec.Matrix[0]
			phase(PhaseWarmup, stageSeconds(w, float64(point.ISL), float64(point.OSL), 1, 0), 0)
		}
	}
	t := Timing{Basis: "unknown", Confidence: "low", Phases: phases, Assumptions: unknownAssumptions}
	largest := 0
	recommended := FallbackTimeoutSeconds
	if phases.Len() > 0 {
		lower, upper := 0, 0
		for _, name := range phases.names {
			b := phases.bounds[name]
			lower += b.LowerSeconds
			upper += b.UpperSeconds
			largest = max(largest, b.UpperSeconds)
		}
		// Each repetition runs every phase again (warm-up only once, but its share is small
		// and the bounds stay bounds); the phases are per invocation, as the timeout is.
		reps := *d.Repetitions
		requests, lower, upper = requests*reps, lower*reps, upper*reps
		t.Basis, t.Assumptions = "configuration", knownAssumptions
		t.MeasuredRequests, t.LowerSeconds, t.UpperSeconds = &requests, &lower, &upper
		recommended = min(MaxTimeoutSeconds, max(MinAutoTimeoutSeconds, int(math.Ceil(float64(largest)*1.5+120))))
	}
	t.RecommendedTimeoutSeconds = recommended
	t.TimeoutMode, t.TimeoutSeconds = "auto", recommended
	if spec.WaitTimeoutSeconds != nil {
		t.TimeoutMode, t.TimeoutSeconds = "manual", *spec.WaitTimeoutSeconds
	}
	if largest > t.TimeoutSeconds {
		w := timeoutWarning
		t.TimeoutWarning = &w
	}
	return t
}
