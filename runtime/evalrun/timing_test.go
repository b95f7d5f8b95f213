package evalrun

import (
	"encoding/json"
	"testing"

	"github.com/lensfn/lensfn/events"
)

func intp(v int) *int { return &v }

func TestEstimateReproducesTheSpecsWorkedExample(t *testing.T) {
	spec := events.BenchmarkSpec{Parallelism: intp(1), SharedPrefix: &events.SharedPrefix{
		NumGroups: 4, NumPromptsPerGroup: 5, SystemPromptLen: 512, QuestionLen: 128, OutputLen: 64,
		Stages: []events.RateStage{{Rate: 0.4, Duration: 20}, {Rate: 0.8, Duration: 20}}}}
	got := Estimate(spec)
	if *got.MeasuredRequests != 24 || *got.LowerSeconds != 160 || *got.UpperSeconds != 340 || got.TimeoutSeconds != 900 {
		t.Fatalf("estimate = %+v, want 24 requests, 160-340 s, timeout 900", got)
	}
	b, _ := got.Phases.Get(PhaseBenchmark)
	if got.Phases.Len() != 1 || b != (PhaseBounds{160, 340}) {
		t.Fatalf("phases = %v", got.Phases.Names())
	}
	if got.Basis != "configuration" || got.Confidence != "low" || got.TimeoutMode != "auto" ||
		got.RecommendedTimeoutSeconds != 900 || got.TimeoutWarning != nil || got.Assumptions != knownAssumptions {
		t.Fatalf("estimate = %+v", got)
	}
	raw, _ := json.Marshal(got)
	want := `{"basis":"configuration","confidence":"low","measured_requests":24,"lower_seconds":160,"upper_seconds":340,` +
		`"phases":{"benchmark":{"lower_seconds":160,"upper_seconds":340}},"timeout_mode":"auto","timeout_seconds":900,` +
		`"recommended_timeout_seconds":900,"timeout_warning":null,"assumptions":"` + knownAssumptions + `"}`
	if string(raw) != want {
		t.Fatalf("JSON:\n%s\nwant\n%s", raw, want)
	}
}

func TestEstimateBranches(t *testing.T) {
	matrix := []events.MatrixPoint{{ISL: 1024, OSL: 128}, {ISL: 128, OSL: 64}}
	stages := []events.ConcurrencyStage{{Concurrency: 8, NumRequests: 96}}
	yaml := "load: {}\napi: {}\ndata: {}\n"
	multi := true
	tests := []struct {
		name          string
		spec          events.BenchmarkSpec
		basis         string
		requests      int // -1: null
		phases        []string
		lower, upper  int
		timeout       int
		mode          string
		warning       bool
		recommended   int
		checkTimeouts bool
	}{
		{name: "matrix with stages and default warm-up, parallelism 2",
			// matrix-0: s = max(96*2*(0.512+0.64)=221.184, 12*(1.024+6.4)=89.088) = 221.184
			//   lower ceil(120+55.296)=176, upper ceil(521.184)=522
			// matrix-1: s = max(96*2*(0.064+0.32)=73.728, 12*(0.128+3.2)=39.936) = 73.728
			//   lower ceil(120+18.432)=139, upper ceil(373.728)=374
			// warmup: s = max(2*2*1.152=4.608, 2*(1.024+6.4)=14.848) = 14.848 -> 124, 315
			spec:  events.BenchmarkSpec{Parallelism: intp(2), Matrix: matrix, ConcurrencyStages: stages},
			basis: "configuration", requests: 384, phases: []string{"matrix-0", "matrix-1", "warmup"},
			lower: 176 + 139 + 124, upper: 522 + 374 + 315, timeout: 903, mode: "auto", recommended: 903}, // ceil(1.5*522+120)
		{name: "matrix without warm-up and a manual timeout below the largest phase",
			spec:  events.BenchmarkSpec{Parallelism: intp(2), Matrix: matrix, ConcurrencyStages: stages, WarmupRequests: intp(0), WaitTimeoutSeconds: intp(500)},
			basis: "configuration", requests: 384, phases: []string{"matrix-0", "matrix-1"},
			lower: 176 + 139, upper: 522 + 374, timeout: 500, mode: "manual", warning: true, recommended: 903},
		{name: "matrix without stages is unknown", spec: events.BenchmarkSpec{Matrix: matrix},
			basis: "unknown", requests: -1, timeout: 7200, mode: "auto", recommended: 7200},
		{name: "named workload is unknown", spec: events.BenchmarkSpec{},
			basis: "unknown", requests: -1, timeout: 7200, mode: "auto", recommended: 7200},
		{name: "workload_yaml is unknown, manual timeout kept", spec: events.BenchmarkSpec{WorkloadYAML: &yaml, WaitTimeoutSeconds: intp(60)},
			basis: "unknown", requests: -1, timeout: 60, mode: "manual", recommended: 7200},
		{name: "multi-turn shared prefix is unknown", spec: events.BenchmarkSpec{SharedPrefix: &events.SharedPrefix{EnableMultiTurnChat: &multi,
			SystemPromptLen: 1, QuestionLen: 1, OutputLen: 1, Stages: []events.RateStage{{Rate: 1, Duration: 1}}}},
			basis: "unknown", requests: -1, timeout: 7200, mode: "auto", recommended: 7200},
		{name: "shared prefix truncates rate x duration (0.29 x 100 = 28)",
			// count 28; s = max(100, 28*(0.001+0.005)=0.168, 4*(0.002+0.05)) = 100; lower ceil(120+100)=220, upper 400
			spec: events.BenchmarkSpec{SharedPrefix: &events.SharedPrefix{SystemPromptLen: 1, QuestionLen: 1, OutputLen: 1,
				Stages: []events.RateStage{{Rate: 0.29, Duration: 100}}}},
			basis: "configuration", requests: 28, phases: []string{"benchmark"}, lower: 220, upper: 400, timeout: 900, mode: "auto", recommended: 900},
		{name: "huge matrix clamps the recommendation to 14400 and warns",
			spec: events.BenchmarkSpec{Matrix: []events.MatrixPoint{{ISL: 100000, OSL: 30000}},
				ConcurrencyStages: []events.ConcurrencyStage{{Concurrency: 1, NumRequests: 1000}}, WarmupRequests: intp(0)},
			basis: "configuration", requests: 1000, phases: []string{"matrix-0"}, timeout: 14400, mode: "auto", warning: true, recommended: 14400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Estimate(tc.spec)
			if got.Basis != tc.basis || got.TimeoutSeconds != tc.timeout || got.TimeoutMode != tc.mode ||
				(got.TimeoutWarning != nil) != tc.warning || got.RecommendedTimeoutSeconds != tc.recommended {
				t.Fatalf("estimate = %+v", got)
			}
			if tc.requests < 0 {
				if got.MeasuredRequests != nil || got.LowerSeconds != nil || got.UpperSeconds != nil || got.Phases.Len() != 0 ||
					got.Assumptions != unknownAssumptions {
					t.Fatalf("unknown estimate has values: %+v", got)
				}
				raw, _ := json.Marshal(got)
				var m map[string]any
				_ = json.Unmarshal(raw, &m)
				if m["measured_requests"] != nil || m["phases"] == nil {
					t.Fatalf("unknown estimate JSON: %s", raw)
				}
				return
			}
			if *got.MeasuredRequests != tc.requests {
				t.Fatalf("measured_requests = %d, want %d", *got.MeasuredRequests, tc.requests)
			}
			names := got.Phases.Names()
			if len(names) != len(tc.phases) {
				t.Fatalf("phases %v, want %v", names, tc.phases)
			}
			for i := range names {
				if names[i] != tc.phases[i] {
					t.Fatalf("phases %v, want %v", names, tc.phases)
				}
			}
			if tc.lower > 0 && (*got.LowerSeconds != tc.lower || *got.UpperSeconds != tc.upper) {
				t.Fatalf("bounds %d-%d, want %d-%d", *got.LowerSeconds, *got.UpperSeconds, tc.lower, tc.upper)
			}
		})
	}
}

func TestEstimateNeverShortensTheTrafficWindow(t *testing.T) {
	spec := events.BenchmarkSpec{SharedPrefix: &events.SharedPrefix{SystemPromptLen: 10, QuestionLen: 10, OutputLen: 10,
		Stages: []events.RateStage{{Rate: 1, Duration: 600}, {Rate: 2, Duration: 600}}}}
	got := Estimate(spec)
	if *got.LowerSeconds < 1200 {
		t.Fatalf("lower %d is shorter than the 1200 s traffic window", *got.LowerSeconds)
	}
}
