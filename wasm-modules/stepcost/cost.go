package stepcost

import (
	"fmt"
	"math"
)

// Batch is what one engine step computes, summed over its scheduled sequences. A sequence is a
// prefill (a chunk of more than one new token) or a decode (one new token over its context).
type Batch struct {
	// PrefillSeqs and PrefillTokens: the sequences computing a prompt chunk, and their new
	// tokens.
	PrefillSeqs, PrefillTokens int
	// PrefillAttention is the sum over prefill sequences of new x (context before + (new+1)/2):
	// the query-key pairs their causal attention computes.
	PrefillAttention float64
	// PrefillContext is the sum of the prefill sequences' context before the chunk (cached
	// tokens whose KV the chunk reads).
	PrefillContext int
	// DecodeSeqs and DecodeContext: the sequences decoding one token, and the sum of the
	// tokens their attention reads (context including the new token).
	DecodeSeqs, DecodeContext int
	// SampledSeqs is how many sequences produce a token this step (the decodes and the
	// prefills that finish their prompt): the LM head and the sampler run for them.
	SampledSeqs int
}

// Validate refuses a batch the cost model is not defined for: negative counts, or a prefill
// attention that is negative or not a finite number. The stepcost guest checks every batch it
// is given; the engine's own batches always pass.
func (b *Batch) Validate() error {
	for _, f := range []struct {
		v    int
		what string
	}{{b.PrefillSeqs, "prefill_seqs"}, {b.PrefillTokens, "prefill_tokens"}, {b.PrefillContext, "prefill_context"},
		{b.DecodeSeqs, "decode_seqs"}, {b.DecodeContext, "decode_context"}, {b.SampledSeqs, "sampled_seqs"}} {
		if f.v < 0 {
			return fmt.Errorf("batch: %s must not be negative, got %d", f.what, f.v)
		}
	}
	if !(b.PrefillAttention >= 0 && b.PrefillAttention <= math.MaxFloat64) {
		return fmt.Errorf("batch: prefill_attention must be a finite number >= 0, got %v", b.PrefillAttention)
	}
	return nil
}

// Nanoseconds is a duration in seconds as the ABI's i64 nanoseconds, rounded to the nearest
// (lens_step_time and lens_request_overhead return it). A duration that is not a number, is
// negative or does not fit in an i64 (coefficients far outside any GPU's range can price a huge
// batch that way) is an error: Go converts such floats differently on each architecture.
func Nanoseconds(seconds float64) (int64, error) {
	ns := math.Round(seconds * 1e9)
	if !(ns >= 0 && ns < 1<<63) {
		return 0, fmt.Errorf("a duration of %v s is outside the ABI's range (0 to 2^63 ns)", seconds)
	}
	return int64(ns), nil
}

// Tokens is the step's new tokens.
func (b *Batch) Tokens() int { return b.PrefillTokens + b.DecodeSeqs }

// Seqs is the step's scheduled sequences.
func (b *Batch) Seqs() int { return b.PrefillSeqs + b.DecodeSeqs }

// Coefficients are the cost model's fitted terms. Efficiencies are fractions of the datasheet
// peak a kernel reaches; overheads are in microseconds.
type Coefficients struct {
	// ComputeEfficiency scales the tensor-core peak for matrix multiplications and prefill
	// attention.
	ComputeEfficiency float64 `json:"compute_efficiency"`
	// MemoryEfficiency scales the memory bandwidth for reading weights and the KV cache.
	MemoryEfficiency float64 `json:"memory_efficiency"`
	// StepOverheadUs is paid once per step: scheduling, input preparation, sampling, output
	// processing.
	StepOverheadUs float64 `json:"step_overhead_us"`
	// LayerOverheadUs is paid per layer per step: kernel launches and synchronisation that
	// CUDA graphs do not hide.
	LayerOverheadUs float64 `json:"layer_overhead_us"`
	// SeqOverheadUs is paid per scheduled sequence per step (metadata, sampling, detokenising
	// and streaming its token).
	SeqOverheadUs float64 `json:"seq_overhead_us"`
	// AllReduceUs is the latency of one tensor-parallel all-reduce (two per layer when
	// tensor_parallel_size > 1), on top of its bytes over the interconnect.
	AllReduceUs float64 `json:"allreduce_us"`
	// RequestOverheadUs is the API server's cost per request outside the engine's steps (HTTP,
	// tokenising, the first chunk's way out): it delays a request's admission.
	RequestOverheadUs float64 `json:"request_overhead_us"`
}

// Validate refuses coefficients outside their physical range.
func (c *Coefficients) Validate() error {
	if !(c.ComputeEfficiency > 0 && c.ComputeEfficiency <= 1) || !(c.MemoryEfficiency > 0 && c.MemoryEfficiency <= 1) {
		return fmt.Errorf("coefficients: compute_efficiency and memory_efficiency must be in (0, 1]")
	}
	for _, v := range []float64{c.StepOverheadUs, c.LayerOverheadUs, c.SeqOverheadUs, c.AllReduceUs, c.RequestOverheadUs} {
		if !(v >= 0 && v < 1e7) {
			return fmt.Errorf("coefficients: overheads must be between 0 and 1e7 microseconds")
		}
	}
	return nil
}

// Model is one engine's step cost: an architecture on TP GPUs of one kind, with coefficients.
type Model struct {
	Arch Arch
	HW   Hardware
	TP   int
	Coef Coefficients

	// per-GPU constants, derived once
	flopsPerSec, bytesPerSec        float64
	denseFlopsPerToken              float64 // 2 x active linear params / TP
	denseWeightBytes                float64 // weights every step reads per GPU: all but the experts and the input embedding
	weightBytesPerGPU               float64 // all the weights one GPU holds
	expertBytes                     float64 // one expert's MLP per layer per GPU, all layers
	headFlopsPerSeq                 float64
	attnFlopsPerPair, kvBytesPerTok float64
	allReducePerToken, overheadBase float64
	allReduces                      float64
}

// NewModel checks its inputs and derives the per-GPU constants.
func NewModel(a Arch, hw Hardware, tp int, c Coefficients) (*Model, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	if err := hw.Validate(); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if tp < 1 || tp > 64 {
		return nil, fmt.Errorf("tensor_parallel_size must be between 1 and 64, got %d", tp)
	}
	if a.Heads%tp != 0 {
		return nil, fmt.Errorf("tensor_parallel_size %d does not divide %s's %d attention heads", tp, a.Name, a.Heads)
	}
	if a.KVHeads%tp != 0 && tp%a.KVHeads != 0 {
		return nil, fmt.Errorf("tensor_parallel_size %d neither divides nor is a multiple of %s's %d KV heads", tp, a.Name, a.KVHeads)
	}
	m := &Model{Arch: a, HW: hw, TP: tp, Coef: c}
	t := float64(tp)
	m.flopsPerSec = hw.TFLOPS * 1e12 * c.ComputeEfficiency
	m.bytesPerSec = hw.MemoryBandwidthGBs * 1e9 * c.MemoryEfficiency
	layers, bytes := float64(a.Layers), float64(a.DTypeBytes)
	attention := a.attentionParams(tp)
	// A step reads every layer's weights and the LM head (vocab-parallel, one slice per rank),
	// but not the input embedding: it gathers one row per token, which is nothing beside them.
	head := float64(a.Vocab) * float64(a.Hidden) / t
	active := attention
	if a.MoE() {
		router := float64(a.Hidden*a.Experts) / t
		active += float64(a.ExpertsPerToken)*a.mlpParams(a.expertWidth())/t + router
		m.expertBytes = layers * a.mlpParams(a.expertWidth()) * bytes / t
		m.denseWeightBytes = (layers*(attention+router) + head) * bytes
		m.weightBytesPerGPU = m.denseWeightBytes + float64(a.Experts)*m.expertBytes
	} else {
		active += a.mlpParams(a.IntermediateSize) / t
		m.denseWeightBytes = (layers*active + head) * bytes
		m.weightBytesPerGPU = m.denseWeightBytes
	}
	if !a.TiedEmbeddings {
		m.weightBytesPerGPU += head * bytes // the input embedding, held but not streamed
	}
	m.denseFlopsPerToken = 2 * layers * active
	m.headFlopsPerSeq = 2 * head
	// QK^T and PV: two multiply-adds per query-key pair per head dimension.
	m.attnFlopsPerPair = 4 * layers * float64(a.Heads*a.HeadDim) / t
	m.kvBytesPerTok = 2 * layers * a.kvHeadsPerGPU(tp) * float64(a.HeadDim) * bytes
	if tp > 1 {
		m.allReduces = 2 * layers
		// A ring all-reduce moves 2(TP-1)/TP of the activation each way.
		m.allReducePerToken = m.allReduces * float64(a.Hidden*a.DTypeBytes) * 2 * (t - 1) / t / (hw.InterconnectGBs * 1e9)
	}
	m.overheadBase = (c.StepOverheadUs + layers*c.LayerOverheadUs + m.allReduces*c.AllReduceUs) * 1e-6
	return m, nil
}

// expertsTouched is how many of a layer's experts T routed tokens use, in expectation with
// uniform routing: E x (1 - (1 - k/E)^T).
func (m *Model) expertsTouched(tokens int) float64 {
	e, k := float64(m.Arch.Experts), float64(m.Arch.ExpertsPerToken)
	miss := 1.0
	base := 1 - k/e
	for n := tokens; n > 0 && miss > 1e-12; n >>= 1 { // base^tokens by squaring
		if n&1 == 1 {
			miss *= base
		}
		base *= base
	}
	return e * (1 - miss)
}

// StepTime is how long one step over b takes, in seconds. An empty batch takes no time.
func (m *Model) StepTime(b *Batch) float64 {
	tokens := b.Tokens()
	if tokens == 0 {
		return 0
	}
	// Linear layers: a soft roofline of their FLOPs against the weights they read.
	flops := float64(tokens)*m.denseFlopsPerToken + float64(b.SampledSeqs)*m.headFlopsPerSeq
	weights := m.denseWeightBytes
	if m.Arch.MoE() {
		weights += m.expertsTouched(tokens) * m.expertBytes
	}
	linear := roofline(flops/m.flopsPerSec, weights/m.bytesPerSec)
	// Attention: prefill chunks are compute-bound, decodes read their context's KV.
	attention := b.PrefillAttention*m.attnFlopsPerPair/m.flopsPerSec +
		float64(b.DecodeContext+b.PrefillContext)*m.kvBytesPerTok/m.bytesPerSec
	comm := float64(tokens) * m.allReducePerToken
	overhead := m.overheadBase + float64(b.Seqs())*m.Coef.SeqOverheadUs*1e-6
	return linear + attention + comm + overhead
}

// RooflineKnee is the exponent of the soft roofline that joins a linear layer's compute time
// and its weight-reading time: (compute^4 + memory^4)^(1/4). A hard max says the two overlap
// perfectly until one of them takes over; real GEMMs near the ridge point lose some of each to
// the other, up to 19 % when both are equal. 4 fits the shipped runs best of 2, 3, 4, 6 and a
// hard max (BENCHMARKS.md); it is a constant of the model, not a coefficient.
const RooflineKnee = 4

// roofline is (a^4 + b^4)^(1/4), computed from the ratio so that no power overflows.
func roofline(a, b float64) float64 {
	hi, lo := max(a, b), min(a, b)
	if !(hi > 0) {
		return 0
	}
	r := lo / hi
	r *= r
	return hi * math.Sqrt(math.Sqrt(1+r*r))
}

// RequestOverhead is the API server's time per request, in seconds.
func (m *Model) RequestOverhead() float64 { return m.Coef.RequestOverheadUs * 1e-6 }

// WeightBytesPerGPU is the weights one GPU holds.
func (m *Model) WeightBytesPerGPU() float64 { return m.weightBytesPerGPU }

// KVBytesPerBlock is one KV block's bytes on one GPU.
func (m *Model) KVBytesPerBlock(blockSize int) float64 { return float64(blockSize) * m.kvBytesPerTok }

// RuntimeReserveBytes is what vLLM keeps per GPU besides weights and KV cache: activations
// of the largest batch, CUDA graphs, the sampler's buffers and the CUDA context (1.2 GB fits
// the shipped measurements within 2 %).
const RuntimeReserveBytes = 1.2e9

// KVBlocks is how many KV blocks fit on each GPU at gpuMemoryUtilization, as vLLM sizes its
// cache: the memory share, less the weights and the runtime's reserve, over a block's bytes.
// It fails when the model does not fit.
func (m *Model) KVBlocks(blockSize int, gpuMemoryUtilization float64) (int, error) {
	if !(gpuMemoryUtilization > 0 && gpuMemoryUtilization <= 1) {
		return 0, fmt.Errorf("gpu_memory_utilization must be in (0, 1], got %v", gpuMemoryUtilization)
	}
	budget := m.HW.MemoryGB*1e9*gpuMemoryUtilization - m.WeightBytesPerGPU() - RuntimeReserveBytes
	blocks := int(budget / m.KVBytesPerBlock(blockSize))
	if blocks < 1 {
		return 0, fmt.Errorf("%s does not fit on %d x %s at gpu_memory_utilization %.2f: %.1f GB of weights per GPU against %.1f GB usable",
			m.Arch.Name, m.TP, m.HW.Name, gpuMemoryUtilization, m.WeightBytesPerGPU()/1e9, m.HW.MemoryGB*gpuMemoryUtilization-RuntimeReserveBytes/1e9)
	}
	return blocks, nil
}
