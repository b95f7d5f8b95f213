package predict

import (
	"syscall"
	"testing"
	"time"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/enginemodel"
	"github.com/lensfn/lensfn/runtime/workload"
)

// largest is the shipped ground truth's largest experiment's shape: Llama-2-70B on four H100s,
// 16,800 requests over 1,200 s.
func largest() (*events.SharedPrefix, enginemodel.Spec) {
	sp := &events.SharedPrefix{NumGroups: 10, NumPromptsPerGroup: 10, SystemPromptLen: 100, QuestionLen: 475, OutputLen: 248,
		Stages: []events.RateStage{{Rate: 8, Duration: 600}, {Rate: 20, Duration: 600}}}
	return sp, enginemodel.Spec{Model: "meta-llama/Llama-2-70b-hf", Hardware: "H100-SXM-80GB", TensorParallelSize: 4,
		MaxNumSeqs: 128, MaxNumBatchedTokens: 2048, BlockSize: 16, KVBlocks: 31356, MaxModelLen: 4096}
}

func TestSharedPrefixPromptsRepeatWhole(t *testing.T) {
	sp := &events.SharedPrefix{NumGroups: 2, NumPromptsPerGroup: 3, SystemPromptLen: 40, QuestionLen: 30, OutputLen: 5,
		Stages: []events.RateStage{{Rate: 50, Duration: 2}}}
	arr, err := Arrivals(workload.NewSharedPrefix(sp, 7), 16)
	if err != nil {
		t.Fatal(err)
	}
	if len(arr) < 12 {
		t.Fatalf("only %d arrivals", len(arr))
	}
	// Request k sends prompt (k mod 2, k/2 mod 3): k and k+6 are the same prompt.
	for k := 0; k+6 < len(arr); k++ {
		a, b := arr[k].BlockHashes, arr[k+6].BlockHashes
		if len(a) != 4 || len(b) != 4 { // 70 tokens: 4 full blocks
			t.Fatalf("request %d has %d blocks", k, len(a))
		}
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("requests %d and %d send one prompt but differ at block %d", k, k+6, i)
			}
		}
	}
	// Requests 0 and 2 share group 0's system prompt (blocks 0 and 1 of 16 tokens), not the question.
	if arr[0].BlockHashes[1] != arr[2].BlockHashes[1] || arr[0].BlockHashes[2] == arr[2].BlockHashes[2] {
		t.Errorf("group prefix not shared exactly")
	}
	if arr[0].BlockHashes[0] == arr[1].BlockHashes[0] {
		t.Errorf("two groups share a system prompt block")
	}
}

func TestClosedLoopWorkloadsAreRefused(t *testing.T) {
	if _, err := Arrivals(workload.Fixed{N: 3, ISL: 10, OSL: 10}, 16); err == nil {
		t.Fatal("a closed-loop schedule was accepted")
	}
}

func TestPredictingALightLoadHasNoQueue(t *testing.T) {
	sp := &events.SharedPrefix{NumGroups: 10, NumPromptsPerGroup: 10, SystemPromptLen: 100, QuestionLen: 475, OutputLen: 100,
		Stages: []events.RateStage{{Rate: 1, Duration: 60}, {Rate: 4, Duration: 60}}}
	eng, err := enginemodel.Spec{Model: "meta-llama/Llama-2-7b-hf", MaxNumSeqs: 128, MaxNumBatchedTokens: 2048}.Resolve(false)
	if err != nil {
		t.Fatal(err)
	}
	run, err := SharedPrefix(sp, 1, eng, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s0, s1 := run.Stage(0), run.Stage(1)
	if s0.Requests < 40 || s1.Requests < 180 || s0.Failed+s1.Failed != 0 || Overloaded(s1) {
		t.Fatalf("stages %+v %+v", s0, s1)
	}
	// A heavier stage batches more, so each token takes longer.
	if !(s1.DecodeIntervalOfMeans > s0.DecodeIntervalOfMeans) {
		t.Errorf("decode interval %.2f ms at 4 rps not above %.2f ms at 1 rps", s1.DecodeIntervalOfMeans, s0.DecodeIntervalOfMeans)
	}
	// Repeated prompts hit the prefix cache: after the first cycle of 100 prompts, most of each
	// 575-token prompt is cached (stage 0 saw 60 of them once).
	if s1.CachedTokensMean < 400 || s1.CachedTokensMean <= s0.CachedTokensMean {
		t.Errorf("mean cached tokens %.0f in stage 1 (stage 0: %.0f), want most of the 575-token prompts", s1.CachedTokensMean, s0.CachedTokensMean)
	}
}

func BenchmarkPredictLargestExperiment(b *testing.B) {
	sp, spec := largest()
	eng, err := spec.Resolve(false)
	if err != nil {
		b.Fatal(err)
	}
	arr, err := Arrivals(workload.NewSharedPrefix(sp, 1), 16)
	if err != nil {
		b.Fatal(err)
	}
	opt := enginemodel.Options{Engine: eng.Engine, Cost: eng.Cost, RequestOverhead: eng.Cost.RequestOverhead(), Timeout: 300}
	b.ResetTimer()
	cpu0 := cpuTime()
	steps := int64(0)
	for i := 0; i < b.N; i++ {
		p, err := enginemodel.Predict(arr, opt)
		if err != nil {
			b.Fatal(err)
		}
		steps = p.Counters.Steps
	}
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(steps), "steps")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(steps), "ns/step")
}

// cpuTime is the process's user and system CPU time: the target is CPU, not wall time, on a
// shared host.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
