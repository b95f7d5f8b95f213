// Package stepcost is the step-cost core of the simulator's vLLM engine model: how long one
// engine step (one forward pass over a continuous batch) takes on given GPUs, from the batch's
// composition, the model's architecture and the hardware's datasheet figures, with a handful of
// fitted coefficients.
//
// It owns:
//   - Arch, a transformer's shape (dense or mixture-of-experts), the catalogue of common models
//     (Models) and ParseHFConfig, which reads a Hugging Face config.json;
//   - Hardware, a GPU's datasheet figures, and the catalogue of common GPUs (GPUs);
//   - Coefficients, the fitted efficiencies and overheads (Fitted is the set fitted on the
//     shipped vLLM measurements);
//   - Model, an architecture on hardware at a tensor-parallel size with coefficients: StepTime
//     of a Batch, the per-request API overhead, the weights' and KV cache's bytes and the KV
//     blocks that fit (KVBlocks);
//   - Config, the JSON a step-cost module is configured with, shared by the native engine and
//     the stepcost guest.
//
// Arithmetic is plain float64 (+ - * / and comparisons) and integer pow, so the native core and
// its wasip1 guest give bit-identical step times.
//
// It imports the standard library only. It is a pure core: every layer may import it, and it
// is compiled into the stepcost guest.
package stepcost
