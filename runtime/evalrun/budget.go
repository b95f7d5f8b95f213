package evalrun

import (
	"fmt"
	"math"

	"github.com/lensfn/lensfn/events"
)

// The in-flight memory budget of one run. Every request in flight costs the runner its prompt
// and answer, and the endpoint (the simulator above all) its body and what it builds from it:
// BENCHMARKS.md ("In-flight memory budget") measures up to about 20 bytes of peak RSS per token
// in flight on the runner and 24 on the simulator (a synthesised prompt is 5.2 bytes a token;
// the rest is copies, token ids, buffers and the garbage collector's headroom), and the
// simulator counts a request as 6 times its body against its own budget of the same size
// (--max-inflight-request-mb), so whatever the runner accepts the stack's simulator serves. InFlightBytesPerToken keeps a margin above both. A run whose busiest
// moment would hold more than InFlightMemoryBudgetBytes is refused with a 422 naming the
// budget, whatever mix of isl, osl, concurrency, rate and parallelism gets there.
const (
	InFlightMemoryBudgetBytes = 1 << 30
	InFlightBytesPerToken     = 32
	// InFlightTokenBudget is the budget in tokens: isl + osl of every request in flight,
	// summed over the run's workers (33,554,432: 131,073-token requests at concurrency 255).
	InFlightTokenBudget = InFlightMemoryBudgetBytes / InFlightBytesPerToken
)

// loadShape is one stage's busiest moment: requests in flight at once (closed loop: the
// concurrency; open loop: one second of arrivals) of at most tokens tokens each.
type loadShape struct {
	where    []string // the field the stage comes from, for the 422
	what     string   // the stage in words
	inFlight float64
	tokens   int
}

// openLoopInFlight is what an open-loop stage of rate req/s counts as in flight: one second
// of arrivals. An endpoint slower than a second per request holds more (README "Security"
// states this limit).
func openLoopInFlight(rate float64) float64 { return math.Ceil(rate) }

// loadShapes lists the stages of a spec whose fields are in range.
func loadShapes(spec events.BenchmarkSpec) []loadShape {
	var out []loadShape
	for i, p := range spec.Matrix {
		for _, st := range Stages(spec) {
			out = append(out, loadShape{[]string{"matrix", fmt.Sprint(i)},
				fmt.Sprintf("matrix point %d (isl %d, osl %d) at concurrency %d", i, p.ISL, p.OSL, st.Concurrency), float64(st.Concurrency), p.ISL + p.OSL})
		}
	}
	if sp := spec.SharedPrefix; sp != nil {
		out = append(out, sharedPrefixShapes(sp, "shared_prefix")...)
	}
	if spec.WorkloadYAML != nil {
		if cfg, err := ParseWorkloadYAML(*spec.WorkloadYAML); err == nil {
			w, generated := cfg.Workload()
			if generated != nil {
				out = append(out, sharedPrefixShapes(generated, "workload_yaml")...)
			} else {
				out = append(out, workloadShapes(w, "workload_yaml")...)
			}
		}
	}
	if len(spec.Matrix) == 0 && spec.SharedPrefix == nil && spec.WorkloadYAML == nil {
		if w, ok := NamedWorkload(*WithDefaults(spec).Workload); ok {
			out = append(out, workloadShapes(w, "workload")...)
		}
	}
	return out
}

func sharedPrefixShapes(sp *events.SharedPrefix, field string) []loadShape {
	tokens := sp.SystemPromptLen + sp.QuestionLen + sp.OutputLen
	if multiTurnOn(sp) { // a later turn resends the conversation so far
		tokens = max(tokens, PlanMultiTurn(sp).LastContextTokens+sp.OutputLen)
	}
	out := make([]loadShape, len(sp.Stages))
	for i, st := range sp.Stages {
		out[i] = loadShape{[]string{field, "stages", fmt.Sprint(i)},
			fmt.Sprintf("%s stage %d at %g req/s of up to %d tokens", field, i, st.Rate, tokens), openLoopInFlight(st.Rate), tokens}
	}
	return out
}

func workloadShapes(w Workload, field string) []loadShape {
	tokens := w.Input.Max + w.Output.Max
	var out []loadShape
	for i, st := range w.Stages {
		out = append(out, loadShape{[]string{field, "stages", fmt.Sprint(i)},
			fmt.Sprintf("%s stage %d at %g req/s of up to %d tokens", field, i, st.Rate, tokens), openLoopInFlight(st.Rate), tokens})
	}
	for i, st := range w.ConcurrencyStages {
		out = append(out, loadShape{[]string{field, "stages", fmt.Sprint(i)},
			fmt.Sprintf("%s stage %d at concurrency %d of up to %d tokens", field, i, st.Concurrency, tokens), float64(st.Concurrency), tokens})
	}
	return out
}

// InFlightTokens is the most tokens a run holds in flight at once over all its workers. Its
// fields must already be in range.
func InFlightTokens(spec events.BenchmarkSpec) float64 {
	tokens, _ := busiest(spec)
	return tokens
}

// busiest is InFlightTokens and the stage where it happens.
func busiest(spec events.BenchmarkSpec) (float64, loadShape) {
	parallelism := float64(*WithDefaults(spec).Parallelism)
	worst, at := 0.0, loadShape{}
	for _, s := range loadShapes(spec) {
		if held := s.inFlight * float64(s.tokens) * parallelism; held > worst {
			worst, at = held, s
		}
	}
	return worst, at
}

// checkMemoryBudget adds the 422 of a spec over the in-flight budget.
func checkMemoryBudget(fe *fieldErrors, spec events.BenchmarkSpec) {
	tokens, at := busiest(spec)
	if tokens <= InFlightTokenBudget {
		return
	}
	fe.add(fmt.Sprintf("this run would hold about %.0f tokens in flight at its busiest (%s, x parallelism %d): about %.0f MiB of "+
		"prompts and answers on the runner and as much on the endpoint, over the in-flight memory budget of %d MiB (%d tokens); "+
		"lower the concurrency, rate, lengths or parallelism", tokens, at.what, *WithDefaults(spec).Parallelism,
		tokens*InFlightBytesPerToken/(1<<20), InFlightMemoryBudgetBytes>>20, InFlightTokenBudget), "memory_budget", at.where...)
}
