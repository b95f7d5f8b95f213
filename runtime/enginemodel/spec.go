package enginemodel

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lensfn/lensfn/wasm-modules/stepcost"
)

// Spec names an engine the way a user does: a model and a GPU from the catalogues (or files),
// vLLM's server settings, and optionally the KV cache's size and the cost coefficients. The
// simulator's engine flags, lensctl predict's flags and a deployment configuration's engine
// settings all fill one.
type Spec struct {
	// Model is a catalogue model (stepcost.Models: its Hugging Face id or the part after the
	// slash) or the path of a Hugging Face config.json.
	Model string `json:"model"`
	// Hardware is a catalogue GPU (stepcost.GPUs) or the path of a JSON file of one.
	Hardware             string  `json:"hardware"`
	TensorParallelSize   int     `json:"tensor_parallel_size"`
	MaxNumSeqs           int     `json:"max_num_seqs"`
	MaxNumBatchedTokens  int     `json:"max_num_batched_tokens"`
	BlockSize            int     `json:"block_size"`
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization"`
	// KVBlocks sets the KV cache's size in blocks; 0 sizes it from the GPU's memory.
	KVBlocks        int  `json:"kv_cache_blocks,omitempty"`
	MaxModelLen     int  `json:"max_model_len,omitempty"`
	NoPrefixCaching bool `json:"no_prefix_caching,omitempty"`
	// NoAsyncScheduling turns vLLM's async scheduling (on by default since v0.14) off.
	NoAsyncScheduling bool `json:"no_async_scheduling,omitempty"`
	// KernelWarmupSeconds sets the one-time stall of kernels compiled on first use (Config's);
	// nil: DefaultKernelWarmup of the model's architecture.
	KernelWarmupSeconds *float64 `json:"kernel_warmup_seconds,omitempty"`
	// Coefficients override the fitted step-cost coefficients.
	Coefficients *stepcost.Coefficients `json:"coefficients,omitempty"`
}

// The settings' defaults, vLLM's for an OpenAI server (block_size, gpu_memory_utilization)
// and the usual serving limits.
const (
	DefaultMaxNumSeqs           = 256
	DefaultMaxNumBatchedTokens  = 8192
	DefaultBlockSize            = 16
	DefaultGPUMemoryUtilization = 0.9
	DefaultHardware             = "H100-SXM-80GB"
)

// MoEKernelWarmupSeconds is a mixture-of-experts model's stall per fused-MoE kernel
// configuration compiled on first use: vLLM's fused-MoE layers are Triton kernels tuned per
// batch size (Config.KernelWarmupSeconds, MoEConfigGrid), JIT-compiled the first time a step
// runs one, and a fresh server has compiled only those of its captured CUDA graphs (up to
// CUDAGraphCaptureTokens) and of its profiling run (max_num_batched_tokens). The shipped
// Mixtral runs show it as a few seconds' stall in each run's first stage with a full batch in
// flight (a mean TTFT 5-10 ms above the median, E2E p99 0.5-3.5 s above the p90), none in the
// second stage or in the Llama runs. Two kernels (the experts' up- and down-projections)
// compile per configuration; the 2 s is set from the Mixtral rows by hand, not by the
// optimiser. The dense models pay nothing.
const MoEKernelWarmupSeconds = 2.0

// CUDAGraphCaptureTokens is vLLM's largest CUDA-graph capture size by default
// (max_cudagraph_capture_size: min(2 x max_num_seqs, 512), no larger than
// max_num_batched_tokens): steps up to it run kernels compiled at start-up.
func CUDAGraphCaptureTokens(maxNumSeqs, maxNumBatchedTokens int) int {
	return min(2*maxNumSeqs, 512, maxNumBatchedTokens)
}

// DefaultKernelWarmup is the kernel warm-up stall of an architecture: MoEKernelWarmupSeconds
// for a mixture of experts, 0 for a dense model.
func DefaultKernelWarmup(a stepcost.Arch) float64 {
	if a.MoE() {
		return MoEKernelWarmupSeconds
	}
	return 0
}

// WithDefaults fills the unset settings.
func (s Spec) WithDefaults() Spec {
	if s.Hardware == "" {
		s.Hardware = DefaultHardware
	}
	if s.TensorParallelSize == 0 {
		s.TensorParallelSize = 1
	}
	if s.MaxNumSeqs == 0 {
		s.MaxNumSeqs = DefaultMaxNumSeqs
	}
	if s.MaxNumBatchedTokens == 0 {
		s.MaxNumBatchedTokens = DefaultMaxNumBatchedTokens
	}
	if s.BlockSize == 0 {
		s.BlockSize = DefaultBlockSize
	}
	if s.GPUMemoryUtilization == 0 {
		s.GPUMemoryUtilization = DefaultGPUMemoryUtilization
	}
	return s
}

// maxSpecFile bounds a config.json or hardware file.
const maxSpecFile = 1 << 20

func readSpecFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSpecFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxSpecFile {
		return nil, fmt.Errorf("%s is larger than 1 MiB", path)
	}
	return b, nil
}

// looksLikePath tells a file path from a catalogue name.
func looksLikePath(s string) bool {
	return strings.HasSuffix(s, ".json") || strings.HasPrefix(s, "/") || strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../")
}

// ResolveArch finds the model: a catalogue entry, or a config.json path (read only when
// allowFiles).
func ResolveArch(model string, allowFiles bool) (stepcost.Arch, error) {
	if model == "" {
		return stepcost.Arch{}, errors.New("a model is required: a catalogue name (" + strings.Join(stepcost.ModelNames(), ", ") + ") or the path of a Hugging Face config.json")
	}
	if a, ok := stepcost.LookupModel(model); ok {
		return a, nil
	}
	if !looksLikePath(model) {
		return stepcost.Arch{}, fmt.Errorf("unknown model %q: the catalogue has %s; or give the path of a Hugging Face config.json", model, strings.Join(stepcost.ModelNames(), ", "))
	}
	if !allowFiles {
		return stepcost.Arch{}, fmt.Errorf("model %q: file paths are not accepted here, name a catalogue model (%s)", model, strings.Join(stepcost.ModelNames(), ", "))
	}
	b, err := readSpecFile(model)
	if err != nil {
		return stepcost.Arch{}, fmt.Errorf("model config: %v", err)
	}
	return stepcost.ParseHFConfig(model, b)
}

// ResolveHardware finds the GPU: a catalogue entry, or a JSON file (read only when allowFiles).
func ResolveHardware(name string, allowFiles bool) (stepcost.Hardware, error) {
	if h, ok := stepcost.LookupGPU(name); ok {
		return h, nil
	}
	if !looksLikePath(name) {
		return stepcost.Hardware{}, fmt.Errorf("unknown hardware %q: the catalogue has %s; or give the path of a JSON file with name, tflops, memory_bandwidth_gbs, memory_gb and interconnect_gbs", name, strings.Join(stepcost.GPUNames(), ", "))
	}
	if !allowFiles {
		return stepcost.Hardware{}, fmt.Errorf("hardware %q: file paths are not accepted here, name a catalogue GPU (%s)", name, strings.Join(stepcost.GPUNames(), ", "))
	}
	b, err := readSpecFile(name)
	if err != nil {
		return stepcost.Hardware{}, fmt.Errorf("hardware file: %v", err)
	}
	return stepcost.ParseHardware(b)
}

// Resolved is a checked engine: its step-cost model's configuration and model, and the
// engine's settings (the KV cache sized).
type Resolved struct {
	CostConfig stepcost.Config
	Cost       *stepcost.Model
	Engine     Config
}

// Resolve checks every input of s (after WithDefaults) and sizes the KV cache: an unknown
// model or GPU, a TP that does not divide the heads, a model that does not fit, or a setting
// out of range is refused with a message that says which. allowFiles lets Model and Hardware
// name files.
func (s Spec) Resolve(allowFiles bool) (*Resolved, error) {
	s = s.WithDefaults()
	arch, err := ResolveArch(s.Model, allowFiles)
	if err != nil {
		return nil, err
	}
	hw, err := ResolveHardware(s.Hardware, allowFiles)
	if err != nil {
		return nil, err
	}
	cc := stepcost.Config{Model: arch, Hardware: hw, TensorParallelSize: s.TensorParallelSize, Coefficients: s.Coefficients}
	cost, err := cc.Build()
	if err != nil {
		return nil, err
	}
	blocks := s.KVBlocks
	if blocks == 0 {
		if blocks, err = cost.KVBlocks(s.BlockSize, s.GPUMemoryUtilization); err != nil {
			return nil, err
		}
	}
	maxLen := s.MaxModelLen
	if maxLen == 0 {
		maxLen = arch.MaxContext
	}
	if maxLen > blocks*s.BlockSize {
		//lint:ignore ST1005 vLLM's message, word for word, as its engine refuses to start
		return nil, fmt.Errorf("The model's max seq len (%d) is larger than the maximum number of tokens that can be stored in KV cache (%d). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
			maxLen, blocks*s.BlockSize)
	}
	warmup := DefaultKernelWarmup(arch)
	if s.KernelWarmupSeconds != nil {
		warmup = *s.KernelWarmupSeconds
	}
	cfg := Config{MaxNumSeqs: s.MaxNumSeqs, MaxNumBatchedTokens: s.MaxNumBatchedTokens, BlockSize: s.BlockSize,
		KVBlocks: blocks, MaxModelLen: maxLen, NoPrefixCaching: s.NoPrefixCaching, NoAsyncScheduling: s.NoAsyncScheduling,
		KernelWarmupSeconds: warmup, KernelWarmupAboveTokens: CUDAGraphCaptureTokens(s.MaxNumSeqs, s.MaxNumBatchedTokens)}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Resolved{CostConfig: cc, Cost: cost, Engine: cfg}, nil
}

// acceleratorVendors are the vendor-level accelerator profiles an evaluation may name (the
// specification's "nvidia", "intel-xpu"): they say which hardware family a deployment runs on
// without naming a GPU the engine model could cost.
var acceleratorVendors = []string{"nvidia", "amd", "intel-xpu", "intel-gaudi", "google-tpu", "cpu"}

// LookupAccelerator resolves an evaluation's accelerator_profile: a catalogue GPU or one of its
// aliases, or a vendor profile, case-insensitively and with dots ignored ("IDs without dots").
// It returns the canonical profile and whether it is registered.
func LookupAccelerator(name string) (string, bool) {
	key := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(name), ".", ""))
	if h, ok := stepcost.LookupGPU(key); ok {
		return h.Name, true
	}
	for _, id := range stepcost.GPUNames() {
		if strings.ToLower(strings.ReplaceAll(id, ".", "")) == key {
			return id, true
		}
	}
	for _, v := range acceleratorVendors {
		if v == key {
			return v, true
		}
	}
	return "", false
}

// AcceleratorProfiles lists the registered profiles: the catalogue's GPUs, then the vendors.
func AcceleratorProfiles() []string {
	return append(stepcost.GPUNames(), acceleratorVendors...)
}
