package fidelity

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/enginemodel"
	"github.com/lensfn/lensfn/wasm-modules/stepcost"
)

// DefaultGroundTruth is the shipped measurements, beside the repository.
const DefaultGroundTruth = "../shared/reference/vllm-ground-truth/experiments.csv"

// Row is one (experiment, stage) of the ground truth.
type Row struct {
	Experiment, Model, Hardware string
	Arch                        stepcost.Arch
	TP, MaxNumSeqs, MaxBatched  int
	BlockSize, KVBlocks, MaxLen int
	GPUMemoryUtilization        float64
	Groups, PromptsPerGroup     int
	SystemPromptLen             int
	QuestionLen, OutputLen      int
	PromptLenMean               float64
	Stage                       int
	Rate, Duration              float64
	Measured                    Metrics
	Overloaded                  bool
}

// Metrics are the scored figures, in milliseconds.
type Metrics struct {
	TTFTMean, TTFTP90, E2EMean, E2EP90, E2EP99, DecodeInterval float64
}

// MetricNames are the scored metrics in Metrics' order, as the JSON line names them.
var MetricNames = []string{"ttft_mean", "ttft_p90", "e2e_mean", "e2e_p90", "e2e_p99", "decode_interval"}

// Values lists m in MetricNames' order.
func (m Metrics) Values() []float64 {
	return []float64{m.TTFTMean, m.TTFTP90, m.E2EMean, m.E2EP90, m.E2EP99, m.DecodeInterval}
}

// Experiment is one run of the ground truth: its stage rows in order.
type Experiment struct {
	Name string
	Rows []Row
}

// Model is the experiment's model.
func (x *Experiment) Model() string { return x.Rows[0].Model }

// GroundTruthPath is GROUND_TRUTH, else the shipped file found from dir upwards.
func GroundTruthPath(dir string) string {
	if p := os.Getenv("GROUND_TRUTH"); p != "" {
		return p
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, DefaultGroundTruth)
		}
		if filepath.Dir(d) == d {
			return DefaultGroundTruth
		}
	}
}

// Load reads a ground-truth CSV: the per-stage rows (stage_index >= 0), grouped by experiment
// in file order.
func Load(path string) ([]Experiment, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f)
}

// Parse reads ground-truth CSV text.
func Parse(r io.Reader) ([]Experiment, error) {
	cr := csv.NewReader(r)
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("ground truth: %v", err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(h)] = i
	}
	var exps []Experiment
	byName := map[string]int{}
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("ground truth line %d: %v", line, err)
		}
		row, keep, err := parseRow(col, rec)
		if err != nil {
			return nil, fmt.Errorf("ground truth line %d: %v", line, err)
		}
		if !keep {
			continue
		}
		i, ok := byName[row.Experiment]
		if !ok {
			i = len(exps)
			byName[row.Experiment] = i
			exps = append(exps, Experiment{Name: row.Experiment})
		}
		exps[i].Rows = append(exps[i].Rows, row)
	}
	for i := range exps {
		slices.SortFunc(exps[i].Rows, func(a, b Row) int { return a.Stage - b.Stage })
		for k, r := range exps[i].Rows {
			if r.Stage != k {
				return nil, fmt.Errorf("ground truth: experiment %s lacks stage %d", exps[i].Name, k)
			}
		}
	}
	if len(exps) == 0 {
		return nil, fmt.Errorf("ground truth: no stage rows")
	}
	return exps, nil
}

type fields struct {
	col map[string]int
	rec []string
	err error
}

func (f *fields) str(name string) string {
	i, ok := f.col[name]
	if !ok || i >= len(f.rec) {
		if f.err == nil {
			f.err = fmt.Errorf("column %q is missing", name)
		}
		return ""
	}
	return strings.TrimSpace(f.rec[i])
}

func (f *fields) num(name string) float64 {
	s := f.str(name)
	if s == "" {
		return 0
	}
	v, err := strconv.ParseFloat(s, 64)
	if (err != nil || math.IsNaN(v) || math.IsInf(v, 0)) && f.err == nil {
		f.err = fmt.Errorf("column %q: %q is not a number", name, s)
	}
	return v
}

func (f *fields) int(name string) int { return int(math.Round(f.num(name))) }

func parseRow(col map[string]int, rec []string) (Row, bool, error) {
	f := &fields{col: col, rec: rec}
	r := Row{Experiment: f.str("experiment"), Model: f.str("model_hf"), Hardware: f.str("hardware"), Stage: f.int("stage_index")}
	if r.Stage < 0 {
		return r, false, f.err
	}
	dtype := 2
	switch strings.ToLower(f.str("dtype")) {
	case "float32":
		dtype = 4
	}
	r.Arch = stepcost.Arch{Name: r.Model, Architecture: f.str("arch"), Layers: f.int("num_layers"), Hidden: f.int("hidden_size"),
		Heads: f.int("num_heads"), KVHeads: f.int("num_kv_heads"), HeadDim: f.int("head_dim"), IntermediateSize: f.int("intermediate_size"),
		Vocab: f.int("vocab_size"), Experts: f.int("num_experts"), ExpertsPerToken: f.int("experts_per_token"), DTypeBytes: dtype}
	// An MoE model's experts may be narrower than its dense MLP (Qwen3's moe_intermediate_size):
	// the column when the file has it, else the catalogue's figure for the same model.
	if _, ok := col["moe_intermediate_size"]; ok {
		r.Arch.MoEIntermediateSize = f.int("moe_intermediate_size")
	} else if known, ok := stepcost.LookupModel(r.Model); ok && r.Arch.Experts > 0 {
		r.Arch.MoEIntermediateSize = known.MoEIntermediateSize
	}
	if _, ok := col["tie_word_embeddings"]; ok {
		r.Arch.TiedEmbeddings = strings.EqualFold(f.str("tie_word_embeddings"), "true")
	} else if known, ok := stepcost.LookupModel(r.Model); ok {
		r.Arch.TiedEmbeddings = known.TiedEmbeddings
	}
	r.TP, r.MaxNumSeqs, r.MaxBatched = f.int("tp"), f.int("max_num_seqs"), f.int("max_num_batched_tokens")
	r.BlockSize, r.KVBlocks, r.MaxLen = f.int("block_size"), f.int("kv_blocks_total_gpu"), f.int("max_model_len")
	if _, ok := col["gpu_memory_utilization"]; ok {
		r.GPUMemoryUtilization = f.num("gpu_memory_utilization")
	}
	r.Groups, r.PromptsPerGroup = f.int("resolved_num_groups"), f.int("resolved_num_prompts_per_group")
	r.SystemPromptLen, r.QuestionLen, r.OutputLen = f.int("system_prompt_len"), f.int("question_len"), f.int("output_len_max_tokens")
	r.PromptLenMean = f.num("prompt_len_mean")
	r.Rate, r.Duration = f.num("stage_rate_rps"), f.num("stage_duration_s")
	r.Measured = Metrics{TTFTMean: f.num("ttft_mean_ms"), TTFTP90: f.num("ttft_p90_ms"), E2EMean: f.num("e2e_mean_ms"),
		E2EP90: f.num("e2e_p90_ms"), E2EP99: f.num("e2e_p99_ms"), DecodeInterval: f.num("decode_interval_est_ms")}
	r.Overloaded = strings.EqualFold(f.str("overloaded"), "true")
	if f.err != nil {
		return r, false, f.err
	}
	if err := r.Arch.Validate(); err != nil {
		return r, false, err
	}
	if r.Rate <= 0 || r.Duration <= 0 || r.Groups <= 0 || r.PromptsPerGroup <= 0 || r.OutputLen <= 0 {
		return r, false, fmt.Errorf("experiment %s stage %d: rate, duration, groups, prompts and output length must be positive", r.Experiment, r.Stage)
	}
	return r, true, nil
}

// Spec is the experiment's engine: its architecture, the catalogue GPU, its settings and
// KV blocks, with coefficients coef.
func (x *Experiment) Spec(coef stepcost.Coefficients) (*enginemodel.Resolved, error) {
	r := x.Rows[0]
	hw, ok := stepcost.LookupGPU(r.Hardware)
	if !ok {
		return nil, fmt.Errorf("experiment %s: hardware %q is not in the catalogue (%s)", x.Name, r.Hardware, strings.Join(stepcost.GPUNames(), ", "))
	}
	cc := stepcost.Config{Model: r.Arch, Hardware: hw, TensorParallelSize: r.TP, Coefficients: &coef}
	cost, err := cc.Build()
	if err != nil {
		return nil, fmt.Errorf("experiment %s: %v", x.Name, err)
	}
	blocks := r.KVBlocks
	if blocks == 0 {
		util := r.GPUMemoryUtilization
		if util <= 0 {
			util = enginemodel.DefaultGPUMemoryUtilization
		}
		if blocks, err = cost.KVBlocks(r.BlockSize, util); err != nil {
			return nil, fmt.Errorf("experiment %s: %v", x.Name, err)
		}
	}
	cfg := enginemodel.Config{MaxNumSeqs: r.MaxNumSeqs, MaxNumBatchedTokens: r.MaxBatched, BlockSize: r.BlockSize, KVBlocks: blocks, MaxModelLen: r.MaxLen,
		KernelWarmupSeconds: enginemodel.DefaultKernelWarmup(r.Arch), KernelWarmupAboveTokens: enginemodel.CUDAGraphCaptureTokens(r.MaxNumSeqs, r.MaxBatched)}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("experiment %s: %v", x.Name, err)
	}
	return &enginemodel.Resolved{CostConfig: cc, Cost: cost, Engine: cfg}, nil
}

// Workload is the experiment's shared-prefix workload: its stages back to back. The question
// length is the measured prompt length less the system prompt where the row has one (the
// tokenizer's count of the prompt as sent), else question_len.
func (x *Experiment) Workload() *events.SharedPrefix {
	r := x.Rows[0]
	q := r.QuestionLen
	if r.PromptLenMean > float64(r.SystemPromptLen) {
		q = int(math.Round(r.PromptLenMean)) - r.SystemPromptLen
	}
	sp := &events.SharedPrefix{NumGroups: r.Groups, NumPromptsPerGroup: r.PromptsPerGroup, SystemPromptLen: r.SystemPromptLen,
		QuestionLen: q, OutputLen: r.OutputLen}
	for _, row := range x.Rows {
		sp.Stages = append(sp.Stages, events.RateStage{Rate: row.Rate, Duration: row.Duration})
	}
	return sp
}
