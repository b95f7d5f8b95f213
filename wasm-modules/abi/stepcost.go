package abi

// StepTimeArgs are lens_step_time's arguments in their order and ABI types (ABI.md section
// 8.1): the fields of one engine step's batch (wasm-modules/stepcost's Batch).
type StepTimeArgs struct {
	PrefillSeqs      int32   // sequences computing a prompt chunk
	PrefillTokens    int32   // their new tokens
	PrefillAttention float64 // sum over them of new x (context before + (new+1)/2)
	PrefillContext   int64   // sum of their context before the chunk
	DecodeSeqs       int32   // sequences decoding one token
	DecodeContext    int64   // sum of the tokens the decodes' attention reads
	SampledSeqs      int32   // sequences producing a token this step
}

// The worked examples of ABI.md section 8.1: a step-cost configuration, one batch and the
// exact values lens_step_time and lens_request_overhead return for them. The native core
// (wasm-modules/stepcost) and the built-in stepcost module through the host
// (tests/conformance) are both held to them. The coefficients are explicit, so refitting the
// defaults does not change the examples.
const (
	// StepCostExampleDense is Llama-2-7B on one H100 SXM.
	StepCostExampleDense = `{"model":{"name":"meta-llama/Llama-2-7b-hf","architecture":"LlamaForCausalLM",` +
		`"num_layers":32,"hidden_size":4096,"num_heads":32,"num_kv_heads":32,"head_dim":128,"intermediate_size":11008,` +
		`"vocab_size":32000,"max_position_embeddings":4096,"dtype_bytes":2},` +
		`"hardware":{"name":"H100-SXM-80GB","tflops":989.5,"memory_bandwidth_gbs":3350,"memory_gb":85.52,"interconnect_gbs":450},` +
		`"tensor_parallel_size":1,` +
		`"coefficients":{"compute_efficiency":0.55,"memory_efficiency":0.8,"step_overhead_us":600,"layer_overhead_us":10,` +
		`"seq_overhead_us":5,"allreduce_us":10,"request_overhead_us":2500.5}}`
	// StepCostExampleMoE is Mixtral-8x7B on two H100 SXM (tensor parallel).
	StepCostExampleMoE = `{"model":{"name":"mistralai/Mixtral-8x7B-v0.1","architecture":"MixtralForCausalLM",` +
		`"num_layers":32,"hidden_size":4096,"num_heads":32,"num_kv_heads":8,"head_dim":128,"intermediate_size":14336,` +
		`"vocab_size":32000,"num_experts":8,"experts_per_token":2,"max_position_embeddings":32768,"dtype_bytes":2},` +
		`"hardware":{"name":"H100-SXM-80GB","tflops":989.5,"memory_bandwidth_gbs":3350,"memory_gb":85.52,"interconnect_gbs":450},` +
		`"tensor_parallel_size":2,` +
		`"coefficients":{"compute_efficiency":0.55,"memory_efficiency":0.8,"step_overhead_us":600,"layer_overhead_us":10,` +
		`"seq_overhead_us":5,"allreduce_us":10,"request_overhead_us":2500.5}}`

	// StepCostExampleRequestOverheadNs is lens_request_overhead under either configuration:
	// request_overhead_us 2500.5 = 2,500,500 ns.
	StepCostExampleRequestOverheadNs int64 = 2_500_500
)

// StepCostExample is one worked example of lens_step_time.
type StepCostExample struct {
	Name   string
	Config string
	Args   StepTimeArgs
	// StepTimeNs is what lens_step_time returns.
	StepTimeNs int64
}

// StepCostExamples are ABI.md section 8.1's worked examples.
var StepCostExamples = []StepCostExample{
	{Name: "dense, mixed batch", Config: StepCostExampleDense,
		// One 512-token prompt chunk after 1,024 cached tokens (attention 512 x (1024 + 513/2)),
		// not its last, beside 31 decodes reading 40,000 tokens between them.
		Args:       StepTimeArgs{PrefillSeqs: 1, PrefillTokens: 512, PrefillAttention: 655616, PrefillContext: 1024, DecodeSeqs: 31, DecodeContext: 40000, SampledSeqs: 31},
		StepTimeNs: 22_742_604},
	{Name: "MoE at TP 2, decode only", Config: StepCostExampleMoE,
		Args:       StepTimeArgs{DecodeSeqs: 64, DecodeContext: 96000, SampledSeqs: 64},
		StepTimeNs: 21_679_773},
}
