package e2e_test

import (
	"context"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/enginemodel"
	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/runtime/predict"
	"github.com/lensfn/lensfn/runtime/workload"
)

// TestOneEngineTwoClocks runs one 60 s slice of a shared-prefix workload both ways: through the
// simulator's engine model in real time, over HTTP with the benchmark runner's schedule and
// load engine, and through the predictor in virtual time, with the same seed. The mean TTFT
// and E2E agree within 5 %: the same scheduler and cost model run under both clocks.
func TestOneEngineTwoClocks(t *testing.T) {
	if testing.Short() {
		t.Skip("a 60 s real-time run")
	}
	const model, seed = "meta-llama/Llama-2-70b-hf", 11
	spec := enginemodel.Spec{Model: model, Hardware: "H100-SXM-80GB", TensorParallelSize: 4, MaxNumSeqs: 128,
		MaxNumBatchedTokens: 2048, BlockSize: 16, MaxModelLen: 4096}
	url := startSimulator(t, "--model", model, "--served-model-name", model, "--latency-calculator", "engine",
		"--tensor-parallel-size", "4", "--max-num-seqs", "128", "--max-num-batched-tokens", "2048", "--max-model-len", "4096")
	// Long questions that never repeat (200 prompts, ~60 requests): each prefill is 3,000
	// tokens, so the TTFT (~0.4 s) dwarfs what HTTP and a busy host's late wake-ups (10-15 ms
	// while the rest of the suite runs) add to it.
	sp := &events.SharedPrefix{NumGroups: 10, NumPromptsPerGroup: 20, SystemPromptLen: 100, QuestionLen: 2900, OutputLen: 60,
		Stages: []events.RateStage{{Rate: 1, Duration: 60}}}

	eng, err := spec.Resolve(false)
	if err != nil {
		t.Fatal(err)
	}
	run, err := predict.SharedPrefix(sp, seed, eng, predict.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := run.Stage(0)

	var mu sync.Mutex
	var ttft, e2e []float64
	failed := 0
	sink := loadgen.SinkFunc(func(r loadgen.Record) error {
		mu.Lock()
		defer mu.Unlock()
		if !r.Successful || r.TTFTMs == nil || r.OutputTokens != float64(sp.OutputLen) {
			failed++
			return nil
		}
		ttft = append(ttft, *r.TTFTMs)
		e2e = append(e2e, r.LatencyMs)
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := loadgen.Config{BaseURL: url, Model: model, API: loadgen.APICompletions, Stream: true, IgnoreEOS: true, Seed: seed,
		RequestTimeout: time.Minute}
	if _, err := loadgen.RunSchedule(ctx, cfg, workload.NewSharedPrefix(sp, seed), sink); err != nil {
		t.Fatal(err)
	}
	if failed > 0 || len(ttft) != want.Requests {
		t.Fatalf("real time: %d requests succeeded, %d failed or short; the predictor had %d", len(ttft), failed, want.Requests)
	}
	gotTTFT, gotE2E := meanOf(ttft), meanOf(e2e)
	t.Logf("%d requests: TTFT mean %.1f ms real time, %.1f ms predicted; E2E mean %.1f ms real time, %.1f ms predicted",
		len(ttft), gotTTFT, want.TTFTMean, gotE2E, want.E2EMean)
	for _, c := range []struct {
		what      string
		got, want float64
	}{{"TTFT mean", gotTTFT, want.TTFTMean}, {"E2E mean", gotE2E, want.E2EMean}} {
		if d := math.Abs(c.got-c.want) / c.want; d > 0.05 {
			t.Errorf("%s: %.1f ms in real time against %.1f ms predicted: %s %% apart, over 5 %%", c.what, c.got, c.want,
				strconv.FormatFloat(d*100, 'f', 1, 64))
		}
	}
}

func meanOf(v []float64) float64 {
	t := 0.0
	for _, x := range v {
		t += x
	}
	return t / float64(len(v))
}
