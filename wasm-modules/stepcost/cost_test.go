package stepcost_test

import (
	"math"
	"testing"

	"github.com/lensfn/lensfn/wasm-modules/stepcost"
)

func mustModel(t *testing.T, a stepcost.Arch, tp int) *stepcost.Model {
	t.Helper()
	m, err := stepcost.NewModel(a, stepcost.GPUs["H100-SXM-80GB"], tp, stepcost.Fitted)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// With more ranks than KV heads each rank keeps one whole KV head (vLLM replicates them), so a
// block's bytes per GPU stop shrinking at TP = num_kv_heads.
func TestKVHeadsReplicatedPastTheirCount(t *testing.T) {
	arch, ok := stepcost.LookupModel("meta-llama/Llama-3.1-70B")
	if !ok {
		t.Fatal("Llama-3.1-70B is not in the catalogue")
	}
	tp4, tp8, tp16 := mustModel(t, arch, 4), mustModel(t, arch, 8), mustModel(t, arch, 16)
	oneHead := float64(16 * 2 * arch.Layers * arch.HeadDim * arch.DTypeBytes) // 16 tokens, K and V
	if got := tp8.KVBytesPerBlock(16); got != oneHead {
		t.Errorf("TP 8 (8 KV heads): %v bytes per block per GPU, want one head's %v", got, oneHead)
	}
	if got := tp16.KVBytesPerBlock(16); got != oneHead {
		t.Errorf("TP 16 (8 KV heads): %v bytes per block per GPU, want one replicated head's %v", got, oneHead)
	}
	if got := tp4.KVBytesPerBlock(16); got != 2*oneHead {
		t.Errorf("TP 4: %v bytes per block per GPU, want two heads' %v", got, 2*oneHead)
	}
	// A decode reading 10,000 tokens of context reads as much KV per GPU at TP 16 as at TP 8.
	decode := stepcost.Batch{DecodeSeqs: 1, DecodeContext: 10_000, SampledSeqs: 1}
	long := decode
	long.DecodeContext = 110_000
	kv8 := tp8.StepTime(&long) - tp8.StepTime(&decode)
	kv16 := tp16.StepTime(&long) - tp16.StepTime(&decode)
	if math.Abs(kv8-kv16) > 1e-12 {
		t.Errorf("100,000 more tokens of context: +%v s at TP 8, +%v s at TP 16; want the same", kv8, kv16)
	}
}

// A step streams every layer and the LM head, not the input embedding (one row gathered per
// token): tying the two changes what a GPU holds, not what a step reads.
func TestStepReadsTheLMHeadNotTheInputEmbedding(t *testing.T) {
	untied, _ := stepcost.LookupModel("meta-llama/Llama-3.1-70B")
	tied := untied
	tied.TiedEmbeddings = true
	a, b := mustModel(t, untied, 4), mustModel(t, tied, 4)
	decode := stepcost.Batch{DecodeSeqs: 8, DecodeContext: 8000, SampledSeqs: 8}
	if a.StepTime(&decode) != b.StepTime(&decode) {
		t.Errorf("decode step: %v s untied, %v s tied; want the same", a.StepTime(&decode), b.StepTime(&decode))
	}
	embedding := float64(untied.Vocab*untied.Hidden*untied.DTypeBytes) / 4
	if got := a.WeightBytesPerGPU() - b.WeightBytesPerGPU(); math.Abs(got-embedding) > 1 {
		t.Errorf("untied holds %v more bytes per GPU than tied, want the embedding's %v", got, embedding)
	}
	// With no KV head replicated (8 KV heads on 4 ranks), a GPU holds a quarter of the weights.
	if got, want := a.WeightBytesPerGPU(), untied.WeightBytes()/4; math.Abs(got-want) > 1 {
		t.Errorf("weights per GPU %v, want %v", got, want)
	}
}
