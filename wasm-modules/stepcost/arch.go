package stepcost

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Arch is a decoder-only transformer's shape: what the step cost and the KV cache's size
// depend on. Mixture-of-experts models set Experts and ExpertsPerToken; their expert MLPs are
// MoEIntermediateSize wide (IntermediateSize when zero).
type Arch struct {
	Name                string `json:"name,omitempty"`
	Architecture        string `json:"architecture,omitempty"`
	Layers              int    `json:"num_layers"`
	Hidden              int    `json:"hidden_size"`
	Heads               int    `json:"num_heads"`
	KVHeads             int    `json:"num_kv_heads"`
	HeadDim             int    `json:"head_dim"`
	IntermediateSize    int    `json:"intermediate_size"`
	MoEIntermediateSize int    `json:"moe_intermediate_size,omitempty"`
	Vocab               int    `json:"vocab_size"`
	Experts             int    `json:"num_experts,omitempty"`
	ExpertsPerToken     int    `json:"experts_per_token,omitempty"`
	TiedEmbeddings      bool   `json:"tie_word_embeddings,omitempty"`
	MaxContext          int    `json:"max_position_embeddings,omitempty"`
	// DTypeBytes is the weights' and KV cache's bytes per value (2 for float16/bfloat16).
	DTypeBytes int `json:"dtype_bytes"`
}

// MoE reports whether the model routes tokens to experts.
func (a *Arch) MoE() bool { return a.Experts > 1 && a.ExpertsPerToken > 0 }

func (a *Arch) expertWidth() int {
	if a.MoEIntermediateSize > 0 {
		return a.MoEIntermediateSize
	}
	return a.IntermediateSize
}

// attentionParams is one layer's attention projections on one of tp ranks: q and o (heads x
// head_dim) split across the ranks, k and v (kv_heads x head_dim) too, or one replicated KV
// head per rank when the model has fewer KV heads than ranks (tp 1: the whole layer's).
func (a *Arch) attentionParams(tp int) float64 {
	return float64(a.Hidden) * float64(a.HeadDim) * (2*float64(a.Heads)/float64(tp) + 2*a.kvHeadsPerGPU(tp))
}

// mlpParams is one gated MLP (gate, up, down) of width w.
func (a *Arch) mlpParams(w int) float64 { return 3 * float64(a.Hidden) * float64(w) }

// embeddingParams is the input embedding plus the LM head (one matrix when tied).
func (a *Arch) embeddingParams() float64 {
	n := float64(a.Vocab) * float64(a.Hidden)
	if a.TiedEmbeddings {
		return n
	}
	return 2 * n
}

// Params is the model's parameter count (the norms' few parameters left out).
func (a *Arch) Params() float64 {
	perLayer := a.attentionParams(1)
	if a.MoE() {
		perLayer += float64(a.Experts)*a.mlpParams(a.expertWidth()) + float64(a.Hidden*a.Experts)
	} else {
		perLayer += a.mlpParams(a.IntermediateSize)
	}
	return float64(a.Layers)*perLayer + a.embeddingParams()
}

// WeightBytes is the bytes of all weights.
func (a *Arch) WeightBytes() float64 { return a.Params() * float64(a.DTypeBytes) }

// kvHeadsPerGPU is how many KV heads one of tp ranks holds: its share, or one replicated
// head when the model has fewer KV heads than ranks.
func (a *Arch) kvHeadsPerGPU(tp int) float64 {
	if a.KVHeads < tp {
		return 1
	}
	return float64(a.KVHeads) / float64(tp)
}

// KVBytesPerToken is the KV cache's bytes for one token over all layers and all GPUs, each KV
// head counted once.
func (a *Arch) KVBytesPerToken() float64 {
	return float64(2 * a.Layers * a.KVHeads * a.HeadDim * a.DTypeBytes)
}

// Validate refuses a shape the cost model cannot use.
func (a *Arch) Validate() error {
	name := a.Name
	if name == "" {
		name = "the model"
	}
	for _, f := range []struct {
		v    int
		what string
	}{{a.Layers, "num_layers"}, {a.Hidden, "hidden_size"}, {a.Heads, "num_heads"}, {a.KVHeads, "num_kv_heads"},
		{a.HeadDim, "head_dim"}, {a.IntermediateSize, "intermediate_size"}, {a.Vocab, "vocab_size"}, {a.DTypeBytes, "dtype_bytes"}} {
		if f.v <= 0 {
			return fmt.Errorf("%s: %s must be positive, got %d", name, f.what, f.v)
		}
	}
	if a.Layers > 1000 || a.Hidden > 1<<20 || a.Heads > 1<<12 || a.HeadDim > 1<<12 || a.IntermediateSize > 1<<22 || a.Vocab > 1<<24 || a.DTypeBytes > 8 {
		return fmt.Errorf("%s: the architecture's sizes are out of range", name)
	}
	if a.Heads%a.KVHeads != 0 {
		return fmt.Errorf("%s: num_heads %d is not a multiple of num_kv_heads %d", name, a.Heads, a.KVHeads)
	}
	if a.Experts < 0 || a.Experts > 4096 || a.ExpertsPerToken < 0 || a.ExpertsPerToken > a.Experts {
		return fmt.Errorf("%s: experts_per_token %d must be between 0 and num_experts %d", name, a.ExpertsPerToken, a.Experts)
	}
	return nil
}

// hfConfig is the part of a Hugging Face config.json the cost model reads; text_config holds
// it for the multimodal models that nest their language model.
type hfConfig struct {
	Architectures      []string  `json:"architectures"`
	ModelType          string    `json:"model_type"`
	Layers             int       `json:"num_hidden_layers"`
	Hidden             int       `json:"hidden_size"`
	Heads              int       `json:"num_attention_heads"`
	KVHeads            *int      `json:"num_key_value_heads"`
	HeadDim            *int      `json:"head_dim"`
	Intermediate       int       `json:"intermediate_size"`
	MoEIntermediate    int       `json:"moe_intermediate_size"`
	Vocab              int       `json:"vocab_size"`
	LocalExperts       int       `json:"num_local_experts"`
	Experts            int       `json:"num_experts"`
	ExpertsPerToken    int       `json:"num_experts_per_tok"`
	TieWordEmbeddings  bool      `json:"tie_word_embeddings"`
	MaxPosition        int       `json:"max_position_embeddings"`
	TorchDType         string    `json:"torch_dtype"`
	DType              string    `json:"dtype"`
	TextConfig         *hfConfig `json:"text_config"`
	QuantizationConfig any       `json:"quantization_config"`
}

// ParseHFConfig reads a Hugging Face config.json into an Arch named name.
func ParseHFConfig(name string, b []byte) (Arch, error) {
	var c hfConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return Arch{}, fmt.Errorf("config.json of %s is not valid JSON: %v", name, err)
	}
	if c.Layers == 0 && c.TextConfig != nil {
		arch := c.Architectures
		c = *c.TextConfig
		c.Architectures = arch
	}
	if c.QuantizationConfig != nil {
		return Arch{}, fmt.Errorf("config.json of %s names a quantization_config: quantized kernels are not modelled", name)
	}
	a := Arch{Name: name, Layers: c.Layers, Hidden: c.Hidden, Heads: c.Heads, IntermediateSize: c.Intermediate,
		MoEIntermediateSize: c.MoEIntermediate, Vocab: c.Vocab, TiedEmbeddings: c.TieWordEmbeddings, MaxContext: c.MaxPosition}
	if len(c.Architectures) > 0 {
		a.Architecture = c.Architectures[0]
	}
	a.KVHeads = a.Heads
	if c.KVHeads != nil {
		a.KVHeads = *c.KVHeads
	}
	if c.HeadDim != nil && *c.HeadDim > 0 {
		a.HeadDim = *c.HeadDim
	} else if a.Heads > 0 {
		a.HeadDim = a.Hidden / a.Heads
	}
	a.Experts = max(c.LocalExperts, c.Experts)
	if a.Experts > 0 {
		a.ExpertsPerToken = c.ExpertsPerToken
		if a.IntermediateSize == 0 {
			a.IntermediateSize = a.MoEIntermediateSize
		}
	}
	dtype := c.TorchDType
	if dtype == "" {
		dtype = c.DType
	}
	switch strings.ToLower(dtype) {
	case "", "float16", "bfloat16", "half":
		a.DTypeBytes = 2
	case "float32", "float":
		a.DTypeBytes = 4
	default:
		return Arch{}, fmt.Errorf("config.json of %s: dtype %q is not modelled (float16, bfloat16 or float32)", name, dtype)
	}
	if err := a.Validate(); err != nil {
		return Arch{}, err
	}
	return a, nil
}

// Models is the catalogue of common models, by their Hugging Face ids (their config.json
// figures). Look names up with LookupModel, which also takes the part after the slash.
var Models = map[string]Arch{
	"meta-llama/Llama-2-7b-hf":             llama("meta-llama/Llama-2-7b-hf", 32, 4096, 32, 32, 11008, 32000, false, 4096),
	"meta-llama/Llama-2-13b-hf":            llama("meta-llama/Llama-2-13b-hf", 40, 5120, 40, 40, 13824, 32000, false, 4096),
	"meta-llama/Llama-2-70b-hf":            llama("meta-llama/Llama-2-70b-hf", 80, 8192, 64, 8, 28672, 32000, false, 4096),
	"meta-llama/Llama-3.1-8B":              llama("meta-llama/Llama-3.1-8B", 32, 4096, 32, 8, 14336, 128256, false, 131072),
	"meta-llama/Llama-3.1-8B-Instruct":     llama("meta-llama/Llama-3.1-8B-Instruct", 32, 4096, 32, 8, 14336, 128256, false, 131072),
	"meta-llama/Llama-3.1-70B":             llama("meta-llama/Llama-3.1-70B", 80, 8192, 64, 8, 28672, 128256, false, 131072),
	"meta-llama/Llama-3.1-70B-Instruct":    llama("meta-llama/Llama-3.1-70B-Instruct", 80, 8192, 64, 8, 28672, 128256, false, 131072),
	"meta-llama/Llama-3.3-70B-Instruct":    llama("meta-llama/Llama-3.3-70B-Instruct", 80, 8192, 64, 8, 28672, 128256, false, 131072),
	"meta-llama/Llama-3.2-1B":              withHeadDim(llama("meta-llama/Llama-3.2-1B", 16, 2048, 32, 8, 8192, 128256, true, 131072), 64),
	"meta-llama/Llama-3.2-3B":              llama("meta-llama/Llama-3.2-3B", 28, 3072, 24, 8, 8192, 128256, true, 131072),
	"Qwen/Qwen3-4B":                        qwen3("Qwen/Qwen3-4B", 36, 2560, 32, 8, 9728, true),
	"Qwen/Qwen3-8B":                        qwen3("Qwen/Qwen3-8B", 36, 4096, 32, 8, 12288, false),
	"Qwen/Qwen3-14B":                       qwen3("Qwen/Qwen3-14B", 40, 5120, 40, 8, 17408, false),
	"Qwen/Qwen3-32B":                       qwen3("Qwen/Qwen3-32B", 64, 5120, 64, 8, 25600, false),
	"Qwen/Qwen3-30B-A3B":                   moe(qwen3("Qwen/Qwen3-30B-A3B", 48, 2048, 32, 4, 6144, false), "Qwen3MoeForCausalLM", 128, 8, 768),
	"mistralai/Mixtral-8x7B-v0.1":          moe(llama("mistralai/Mixtral-8x7B-v0.1", 32, 4096, 32, 8, 14336, 32000, false, 32768), "MixtralForCausalLM", 8, 2, 0),
	"mistralai/Mixtral-8x7B-Instruct-v0.1": moe(llama("mistralai/Mixtral-8x7B-Instruct-v0.1", 32, 4096, 32, 8, 14336, 32000, false, 32768), "MixtralForCausalLM", 8, 2, 0),
	"mistralai/Mixtral-8x22B-v0.1":         moe(llama("mistralai/Mixtral-8x22B-v0.1", 56, 6144, 48, 8, 16384, 32768, false, 65536), "MixtralForCausalLM", 8, 2, 0),
}

func llama(name string, layers, hidden, heads, kvHeads, inter, vocab int, tied bool, ctx int) Arch {
	return Arch{Name: name, Architecture: "LlamaForCausalLM", Layers: layers, Hidden: hidden, Heads: heads, KVHeads: kvHeads,
		HeadDim: hidden / heads, IntermediateSize: inter, Vocab: vocab, TiedEmbeddings: tied, MaxContext: ctx, DTypeBytes: 2}
}

func qwen3(name string, layers, hidden, heads, kvHeads, inter int, tied bool) Arch {
	a := llama(name, layers, hidden, heads, kvHeads, inter, 151936, tied, 40960)
	a.Architecture, a.HeadDim = "Qwen3ForCausalLM", 128
	return a
}

func withHeadDim(a Arch, d int) Arch { a.HeadDim = d; return a }

func moe(a Arch, architecture string, experts, perToken, width int) Arch {
	a.Architecture, a.Experts, a.ExpertsPerToken, a.MoEIntermediateSize = architecture, experts, perToken, width
	return a
}

// LookupModel finds a catalogue model by its Hugging Face id or the part after the slash,
// case-insensitively.
func LookupModel(name string) (Arch, bool) {
	if a, ok := Models[name]; ok {
		return a, true
	}
	for id, a := range Models {
		short := id[strings.IndexByte(id, '/')+1:]
		if strings.EqualFold(id, name) || strings.EqualFold(short, name) {
			return a, true
		}
	}
	return Arch{}, false
}

// ModelNames lists the catalogue's ids, sorted.
func ModelNames() []string {
	names := make([]string, 0, len(Models))
	for id := range Models {
		names = append(names, id)
	}
	slices.Sort(names)
	return names
}
