package evalrun

import (
	"encoding/json"
	"math/rand/v2"
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

// The builders of one run share one set of per-request numbers and still compute, byte for
// byte, the metrics the builders computed when each kept its own (legacyBuilder): per stage,
// per matrix point (its stages' records) and for the whole run, with rate stages whose records
// interleave, and past the limits where the shared gaps give way to per-builder reservoirs
// (maxSharedGaps over the run, maxPooledGaps per builder), including builders made after that.
func TestSharedBuildersMatchTheirOwnCopies(t *testing.T) {
	targets := &events.SLATargets{TTFTMs: f(25), TPOTMs: f(3)}
	for name, c := range map[string]struct {
		n, points, stages, gaps int
		interleaved             bool
	}{
		"matrix":         {n: 6000, points: 2, stages: 3, gaps: 8},
		"rate stages":    {n: 5000, points: 1, stages: 4, gaps: 8, interleaved: true},
		"past the pools": {n: 60000, points: 2, stages: 2, gaps: 48},
	} {
		t.Run(name, func(t *testing.T) {
			run := recordedRun(c.n, c.points*c.stages, c.gaps, c.interleaved)
			samples := NewSamples()
			total, legacyTotal := samples.NewBuilder(targets), newLegacyBuilder(targets)
			stages := make([]*Builder, c.points*c.stages)
			legacyStages := make([]*legacyBuilder, len(stages))
			points := make([]*Builder, c.points)
			legacyPoints := make([]*legacyBuilder, c.points)
			for _, req := range run {
				k, p := req.stage, req.stage/c.stages
				if stages[k] == nil { // made when its stage begins, as the runner makes them
					stages[k], legacyStages[k] = samples.NewBuilder(targets), newLegacyBuilder(targets)
				}
				if points[p] == nil {
					points[p], legacyPoints[p] = samples.NewBuilder(targets), newLegacyBuilder(targets)
				}
				samples.Add(req.rec, req.gaps, stages[k], points[p], total)
				legacyStages[k].Add(req.rec, req.gaps)
				legacyPoints[p].Add(req.rec, req.gaps)
				legacyTotal.Add(req.rec, req.gaps)
			}
			if name == "past the pools" && samples.shared {
				t.Fatal("the run never went past the shared gaps")
			}
			compare := func(what string, b *Builder, legacy *legacyBuilder) {
				got, want := metricsJSON(t, b.Metrics("/runs/x.jsonl")), metricsJSON(t, legacy.Metrics("/runs/x.jsonl"))
				if got != want {
					t.Fatalf("%s: shared builder\n%s\nits own copy\n%s", what, got, want)
				}
			}
			compare("run", total, legacyTotal)
			for k := range stages {
				compare("stage", stages[k], legacyStages[k])
			}
			for p := range points {
				compare("point", points[p], legacyPoints[p])
			}
			// Metrics can be computed again (the results and the live view both read them).
			compare("run, again", total, legacyTotal)
		})
	}
}

// A lone builder (NewBuilder, fed through its own Add) is the legacy builder too.
func TestLoneBuilderMatchesItsOwnCopy(t *testing.T) {
	b, legacy := NewBuilder(nil), newLegacyBuilder(nil)
	for _, req := range recordedRun(3000, 1, 6, false) {
		b.Add(req.rec, req.gaps)
		legacy.Add(req.rec, req.gaps)
	}
	if got, want := metricsJSON(t, b.Metrics("a")), metricsJSON(t, legacy.Metrics("a")); got != want {
		t.Fatalf("lone builder\n%s\nlegacy\n%s", got, want)
	}
}
