package evalrun

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/loadgen"
)

// recordedRequest is one request of a synthetic recorded run: its record and its gaps.
type recordedRequest struct {
	rec   loadgen.Record
	gaps  []float64
	stage int
}

// recordedRun is a run's records as a benchmark produces them: mostly successes, some failures,
// records without a first token or a TPOT, empty outputs, and gapsPer inter-token gaps each.
func recordedRun(n, stages, gapsPer int, interleaved bool) []recordedRequest {
	rng := rand.New(rand.NewPCG(7, 11))
	out := make([]recordedRequest, n)
	for i := range out {
		start := float64(i) / 1000
		r := loadgen.Record{RequestID: int64(i + 1), Successful: rng.IntN(20) != 0, ScheduledAtSeconds: start,
			StartedAtSeconds: start + rng.ExpFloat64()/2000, InputTokens: float64(32 + rng.IntN(64)), OutputTokens: float64(rng.IntN(24))}
		r.CompletedAtSeconds = r.StartedAtSeconds + 0.05 + rng.Float64()/10
		r.LatencyMs = (r.CompletedAtSeconds - r.StartedAtSeconds) * 1000
		if rng.IntN(10) != 0 {
			ttft := 20 + rng.NormFloat64()*5
			r.TTFTMs = &ttft
		}
		if r.OutputTokens >= 2 && rng.IntN(10) != 0 {
			tpot := 2 + rng.ExpFloat64()
			r.TPOTMs = &tpot
		}
		gaps := make([]float64, rng.IntN(2*gapsPer+1))
		for k := range gaps {
			gaps[k] = rng.ExpFloat64() * 3
		}
		stage := i * stages / n // stages one after the other, as a matrix point sends them
		if interleaved {
			stage = min(stages-1, max(0, stage+rng.IntN(3)-1)) // rate stages overlap at their edges
		}
		out[i] = recordedRequest{rec: r, gaps: gaps, stage: stage}
	}
	return out
}

func metricsJSON(t *testing.T, m Metrics) string {
	t.Helper()
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// sharedBuilderCases are the recorded runs the shared builders are checked on: matrix points
// (their stages' records one after the other), rate stages whose records interleave at their
// edges, and a run past both gap limits (maxSharedGaps over the run, maxPooledGaps per builder)
// with builders made after the shared gaps gave way.
var sharedBuilderCases = []struct {
	name                    string
	n, points, stages, gaps int
	interleaved             bool
}{
	{name: "matrix", n: 6000, points: 2, stages: 3, gaps: 8},
	{name: "rate-stages", n: 5000, points: 1, stages: 4, gaps: 8, interleaved: true},
	{name: "past-the-pools", n: 60000, points: 2, stages: 2, gaps: 48},
}

// feedSharedBuilders feeds a recorded run to one Samples' builders as the benchmark-runner does
// (a stage's and a point's builder made when they begin) and returns every builder's metrics
// as JSON: the run's, each stage's, each point's, then the run's computed again.
func feedSharedBuilders(t *testing.T, n, points, stages, gaps int, interleaved bool) []string {
	targets := &events.SLATargets{TTFTMs: f(25), TPOTMs: f(3)}
	run := recordedRun(n, points*stages, gaps, interleaved)
	samples := NewSamples()
	total := samples.NewBuilder(targets)
	stageBuilders := make([]*Builder, points*stages)
	pointBuilders := make([]*Builder, points)
	for _, req := range run {
		k, p := req.stage, req.stage/stages
		if stageBuilders[k] == nil {
			stageBuilders[k] = samples.NewBuilder(targets)
		}
		if pointBuilders[p] == nil {
			pointBuilders[p] = samples.NewBuilder(targets)
		}
		samples.Add(req.rec, req.gaps, stageBuilders[k], pointBuilders[p], total)
	}
	if n*gaps > 2*maxSharedGaps && samples.shared {
		t.Fatal("the run never went past the shared gaps")
	}
	out := []string{metricsJSON(t, total.Metrics("/runs/x.jsonl"))}
	for _, b := range append(stageBuilders, pointBuilders...) {
		out = append(out, metricsJSON(t, b.Metrics("/runs/x.jsonl")))
	}
	return append(out, metricsJSON(t, total.Metrics("/runs/x.jsonl")))
}

// The builders of one run share one set of per-request numbers and still compute, byte for byte,
// the metrics the builders computed when each kept its own copy: testdata/shared-builders holds
// what those builders (main at 1649308, before Samples) computed from the same recorded runs.
func TestSharedBuildersMatchTheMetricsOfSeparateBuilders(t *testing.T) {
	for _, c := range sharedBuilderCases {
		t.Run(c.name, func(t *testing.T) {
			got := feedSharedBuilders(t, c.n, c.points, c.stages, c.gaps, c.interleaved)
			raw, err := os.ReadFile(filepath.Join("testdata", "shared-builders", c.name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d builders, the recording has %d", len(got), len(want))
			}
			for i := range want {
				if got[i] = asRecorded(t, got[i]); got[i] != want[i] {
					t.Fatalf("builder %d (0: the run, then stages, points, the run again):\n got %s\nwant %s", i, got[i], want[i])
				}
			}
		})
	}
}

// asRecorded is a metrics block as the recording's builders named it: what is now chunk_gap was
// their itl (the per-token decode interval itl came later), so the chunk-gap numbers are still
// checked against the recording byte for byte.
func asRecorded(t *testing.T, metrics string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(metrics), &m); err != nil {
		t.Fatal(err)
	}
	dists := m["latency_distributions"].(map[string]any)
	dists["itl"], m["itl_ms"] = dists["chunk_gap"], m["chunk_gap_ms"]
	delete(dists, "chunk_gap")
	delete(m, "chunk_gap_ms")
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// A lone builder (NewBuilder, fed through its own Add) computes what the run's builder does.
func TestLoneBuilderMatchesASharedOne(t *testing.T) {
	b := NewBuilder(nil)
	samples := NewSamples()
	shared := samples.NewBuilder(nil)
	for _, req := range recordedRun(3000, 1, 6, false) {
		b.Add(req.rec, req.gaps)
		samples.Add(req.rec, req.gaps, shared)
	}
	if got, want := metricsJSON(t, b.Metrics("a")), metricsJSON(t, shared.Metrics("a")); got != want {
		t.Fatalf("lone builder\n%s\nshared\n%s", got, want)
	}
}
