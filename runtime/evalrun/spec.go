package evalrun

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/enginemodel"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/rawjson"
)

// Defaults of a benchmark spec (spec/evaluation-api.txt, NOTES.md).
const (
	HarnessInferencePerf    = "inference-perf"
	DefaultWorkload         = "sanity_random.yaml"
	DefaultParallelism      = 1
	DefaultHarnessMemoryGiB = 8.0
	DefaultWarmupRequests   = 2
	DefaultRepetitions      = 1
	DefaultRepository       = "https://github.com/llm-d/llm-d-benchmark.git"
	DefaultRevision         = "main"
)

// Harnesses lists the harnesses a run may name.
var Harnesses = []string{HarnessInferencePerf}

// DefaultConcurrencyStages are what a matrix without stages runs (concurrency/requests).
var DefaultConcurrencyStages = []events.ConcurrencyStage{
	{Concurrency: 1, NumRequests: 32}, {Concurrency: 8, NumRequests: 96},
	{Concurrency: 32, NumRequests: 96}, {Concurrency: 64, NumRequests: 192},
}

// Limits of a run request. Past the spec's own limits they bound what one request may make a
// runner do (prompt sizes, request counts, stage lengths).
const (
	MaxParallelism        = 32
	MaxWarmupRequests     = 50
	MaxRepetitions        = 20
	MaxMatrixPoints       = 50
	MaxConcurrencyStages  = 20
	MaxConcurrency        = 4096
	MaxStageRequests      = 1_000_000
	MaxRate               = 10000
	MaxRateStages         = 20
	MaxStageDuration      = 14400
	MaxWorkloadYAMLBytes  = 256 << 10
	MaxInputTokens        = 131072
	MaxOutputTokens       = 32768
	MaxSharedPrefixGroups = 10000
	MaxHarnessMemoryGiB   = 1024
	MaxSLAMs              = 3_600_000
	MaxIdempotencyKeyLen  = 200
	MaxTextField          = 4096
)

var (
	// WorkloadPattern is what a named workload must match (a file name, no directories).
	WorkloadPattern = `^[A-Za-z0-9._-]+$`
	workloadName    = regexp.MustCompile(WorkloadPattern)
	// SLAPercentiles are the percentiles an SLA target may name (ttft_percentile, tpot_percentile).
	SLAPercentiles = []string{"p50", "p90", "p95", "p99"}
)

func ptr[T any](v T) *T { return &v }

// WithDefaults returns spec with every defaulted field filled in (harness, workload,
// parallelism, harness memory, warm-up requests, repetitions).
func WithDefaults(spec events.BenchmarkSpec) events.BenchmarkSpec {
	if spec.Harness == nil {
		spec.Harness = ptr(HarnessInferencePerf)
	}
	if spec.Workload == nil {
		spec.Workload = ptr(DefaultWorkload)
	}
	if spec.Parallelism == nil {
		spec.Parallelism = ptr(DefaultParallelism)
	}
	if spec.HarnessMemoryGiB == nil {
		spec.HarnessMemoryGiB = ptr(DefaultHarnessMemoryGiB)
	}
	if spec.WarmupRequests == nil {
		spec.WarmupRequests = ptr(DefaultWarmupRequests)
	}
	if spec.Repetitions == nil {
		spec.Repetitions = ptr(DefaultRepetitions)
	}
	return spec
}

// Stages are the concurrency stages a matrix runs: the spec's, or the defaults.
func Stages(spec events.BenchmarkSpec) []events.ConcurrencyStage {
	if len(spec.ConcurrencyStages) > 0 {
		return spec.ConcurrencyStages
	}
	return DefaultConcurrencyStages
}

// fieldErrors collects 422 field errors.
type fieldErrors []problem.FieldError

func (f *fieldErrors) add(msg, kind string, loc ...string) {
	*f = append(*f, problem.Field(msg, kind, append([]string{"body"}, loc...)...))
}

func (f *fieldErrors) intRange(v *int, lo, hi int, loc ...string) {
	if v != nil && (*v < lo || *v > hi) {
		f.add(fmt.Sprintf("must be between %d and %d", lo, hi), "value_error", loc...)
	}
}

func (f *fieldErrors) floatRange(v *float64, lo, hi float64, exclusiveLo bool, loc ...string) {
	if v == nil {
		return
	}
	x := *v
	bad := math.IsNaN(x) || math.IsInf(x, 0) || x > hi || x < lo || exclusiveLo && x == lo
	if bad {
		cmp := ">="
		if exclusiveLo {
			cmp = ">"
		}
		f.add(fmt.Sprintf("must be %s %g and <= %g", cmp, lo, hi), "value_error", loc...)
	}
}

func (f *fieldErrors) text(v *string, max int, loc ...string) {
	if v != nil && len(*v) > max {
		f.add(fmt.Sprintf("must be at most %d bytes", max), "value_error", loc...)
	}
}

func (f fieldErrors) err() error {
	if len(f) == 0 {
		return nil
	}
	return problem.Validation(f...)
}

// ValidateSpec checks a benchmark spec against the schema (422, every problem named) and then
// its meaning (400): the harness must be available and a named workload must exist.
func ValidateSpec(spec events.BenchmarkSpec) error {
	var fe fieldErrors
	validateSpecFields(&fe, spec)
	if err := fe.err(); err != nil {
		return err
	}
	return checkSpecMeaning(spec)
}

func validateSpecFields(fe *fieldErrors, spec events.BenchmarkSpec) {
	fe.intRange(spec.Parallelism, 1, MaxParallelism, "parallelism")
	fe.intRange(spec.WaitTimeoutSeconds, 1, MaxTimeoutSeconds, "wait_timeout_seconds")
	fe.intRange(spec.WarmupRequests, 0, MaxWarmupRequests, "warmup_requests")
	fe.intRange(spec.Repetitions, 1, MaxRepetitions, "repetitions")
	fe.floatRange(spec.HarnessMemoryGiB, 0, MaxHarnessMemoryGiB, true, "harness_memory_gib")
	fe.text(spec.Harness, 64, "harness")
	fe.text(spec.AcceleratorProfile, 128, "accelerator_profile")
	if p := spec.AcceleratorProfile; p != nil && len(*p) <= 128 {
		if _, ok := enginemodel.LookupAccelerator(*p); !ok {
			fe.add(fmt.Sprintf("unknown accelerator profile %q: the registered profiles are %s (or a GPU's alias, such as h100)",
				*p, strings.Join(enginemodel.AcceleratorProfiles(), ", ")), "value_error", "accelerator_profile")
		}
	}
	fe.text(spec.StorageClassName, 253, "storage_class_name")
	checkSpecHonoured(fe, spec)
	if spec.Workload != nil && (len(*spec.Workload) > 255 || !workloadName.MatchString(*spec.Workload)) {
		fe.add("must be a file name of letters, digits, '.', '_' and '-' (no directories)", "value_error", "workload")
	}
	if len(spec.Matrix) > MaxMatrixPoints {
		fe.add(fmt.Sprintf("at most %d points", MaxMatrixPoints), "too_long", "matrix")
	} else {
		for i, p := range spec.Matrix {
			idx := fmt.Sprint(i)
			fe.intRange(&p.ISL, 1, MaxInputTokens, "matrix", idx, "isl")
			fe.intRange(&p.OSL, 1, MaxOutputTokens, "matrix", idx, "osl")
		}
	}
	if len(spec.ConcurrencyStages) > MaxConcurrencyStages {
		fe.add(fmt.Sprintf("at most %d stages", MaxConcurrencyStages), "too_long", "concurrency_stages")
	} else {
		for i, s := range spec.ConcurrencyStages {
			idx := fmt.Sprint(i)
			fe.intRange(&s.Concurrency, 1, MaxConcurrency, "concurrency_stages", idx, "concurrency")
			fe.intRange(&s.NumRequests, 1, MaxStageRequests, "concurrency_stages", idx, "num_requests")
		}
	}
	if sp := spec.SharedPrefix; sp != nil {
		before := len(*fe)
		defer func() {
			if len(*fe) == before && multiTurnOn(sp) { // the bounds need lengths and stages in range
				checkMultiTurn(sp, func(msg string, loc []string) { fe.add(msg, "value_error", loc...) },
					[]string{"shared_prefix", "stages"}, []string{"shared_prefix", "enable_multi_turn_chat"})
			}
		}()
		fe.intRange(&sp.NumGroups, 1, MaxSharedPrefixGroups, "shared_prefix", "num_groups")
		fe.intRange(&sp.NumPromptsPerGroup, 1, MaxSharedPrefixGroups, "shared_prefix", "num_prompts_per_group")
		fe.intRange(&sp.SystemPromptLen, 0, MaxInputTokens, "shared_prefix", "system_prompt_len")
		fe.intRange(&sp.QuestionLen, 1, MaxInputTokens, "shared_prefix", "question_len")
		fe.intRange(&sp.OutputLen, 1, MaxOutputTokens, "shared_prefix", "output_len")
		if sp.SystemPromptLen+sp.QuestionLen > MaxInputTokens {
			fe.add(fmt.Sprintf("system_prompt_len + question_len must be at most %d", MaxInputTokens), "value_error", "shared_prefix")
		}
		switch {
		case len(sp.Stages) == 0:
			fe.add("at least one stage is required", "missing", "shared_prefix", "stages")
		case len(sp.Stages) > MaxRateStages:
			fe.add(fmt.Sprintf("at most %d stages", MaxRateStages), "too_long", "shared_prefix", "stages")
		default:
			for i, st := range sp.Stages {
				idx := fmt.Sprint(i)
				fe.floatRange(&st.Rate, 0, MaxRate, true, "shared_prefix", "stages", idx, "rate")
				fe.floatRange(&st.Duration, 0, MaxStageDuration, true, "shared_prefix", "stages", idx, "duration")
			}
		}
	}
	if y := spec.WorkloadYAML; y != nil {
		if _, err := ParseWorkloadYAML(*y); err != nil {
			var pe *problem.Error
			if errors.As(err, &pe) {
				if fields, ok := pe.Detail.([]problem.FieldError); ok {
					*fe = append(*fe, fields...)
				}
			}
		}
	}
	set := 0
	for _, on := range []bool{len(spec.Matrix) > 0, spec.SharedPrefix != nil, spec.WorkloadYAML != nil} {
		if on {
			set++
		}
	}
	if set > 1 {
		fe.add("matrix, shared_prefix and workload_yaml are mutually exclusive", "value_error")
	}
	if len(*fe) == 0 { // the budget needs every length, rate and stage in range
		checkMemoryBudget(fe, spec)
	}
}

func checkSpecMeaning(spec events.BenchmarkSpec) error {
	d := WithDefaults(spec)
	if len(spec.Matrix) == 0 && spec.SharedPrefix == nil && spec.WorkloadYAML == nil {
		if _, ok := NamedWorkload(*d.Workload); !ok {
			return problem.New(problem.CodeBadRequest, "workload %q is not shipped with Lensfn; available: %s", *d.Workload, strings.Join(NamedWorkloads(), ", "))
		}
	}
	return nil
}

// ValidateRequest checks a POST /runs body: the spec, the target, the SLA targets and the
// recorded strings (422 for the schema, 400 for meaning).
func ValidateRequest(req events.EvaluateRunRequest) error {
	var fe fieldErrors
	validateSpecFields(&fe, req.BenchmarkSpec)
	hasExec := req.DeploymentExecutionID != nil && *req.DeploymentExecutionID != ""
	hasGroup := req.ModelServiceGroupID != nil && *req.ModelServiceGroupID != ""
	if hasExec == hasGroup {
		fe.add("exactly one of deployment_execution_id and model_service_group_id must be set", "value_error")
	}
	if hasGroup && (req.APIKey == nil || *req.APIKey == "") {
		fe.add("api_key is required with model_service_group_id", "missing", "api_key")
	}
	for name, v := range map[string]*string{"deployment_execution_id": req.DeploymentExecutionID,
		"model_service_group_id": req.ModelServiceGroupID, "cluster_session_id": req.ClusterSessionID} {
		fe.text(v, 128, name)
	}
	fe.text(req.APIKey, MaxTextField, "api_key")
	for name, v := range map[string]*string{"specification_file": req.SpecificationFile, "http_proxy": req.HTTPProxy,
		"https_proxy": req.HTTPSProxy, "no_proxy": req.NoProxy} {
		fe.text(v, MaxTextField, name)
	}
	if src := req.BenchmarkSource; src != nil {
		fe.text(src.Repository, MaxTextField, "benchmark_source", "repository")
		fe.text(src.Revision, 256, "benchmark_source", "revision")
	}
	checkSourceAndProxies(&fe, req.BenchmarkSource, map[string]*string{"http_proxy": req.HTTPProxy,
		"https_proxy": req.HTTPSProxy, "no_proxy": req.NoProxy})
	if t := req.SLATargets; t != nil {
		fe.floatRange(t.TTFTMs, 0, MaxSLAMs, true, "sla_targets", "ttft_ms")
		fe.floatRange(t.TPOTMs, 0, MaxSLAMs, true, "sla_targets", "tpot_ms")
		fe.floatRange(t.ThroughputMinTPS, 0, math.MaxFloat64, false, "sla_targets", "throughput_min_tps")
		fe.floatRange(t.SuccessRateMinPercent, 0, 100, false, "sla_targets", "success_rate_min_percent")
		for name, p := range map[string]*string{"ttft_percentile": t.TTFTPercentile, "tpot_percentile": t.TPOTPercentile} {
			if p != nil && !slices.Contains(SLAPercentiles, *p) {
				fe.add("must be one of p50, p90, p95, p99", "value_error", "sla_targets", name)
			}
		}
	}
	if err := fe.err(); err != nil {
		return err
	}
	return checkSpecMeaning(req.BenchmarkSpec)
}

// ParseRequest decodes a POST /runs body strictly (422 naming the field) and keeps its raw
// top-level fields, so the stored run shows what was sent: absent stays absent, null stays null.
func ParseRequest(body []byte) (events.EvaluateRunRequest, map[string]json.RawMessage, error) {
	return problem.DecodeStrictFields[events.EvaluateRunRequest](body)
}

// Target is what a run benchmarks: a deployment execution (or a Model Service's active member)
// resolved by the inventory.
type Target struct {
	ExecutionID      string
	ClusterSessionID string
	ClusterID        string
	Name             string
	Model            string // the model name requests carry
	Endpoint         string // OpenAI base URL
	Namespace        string
	Ownership        string // existing-endpoint or evaluation
	Status           string // the execution's status
	ProviderRef      string // the guide the deployer deployed it from ("" for an existing endpoint)
	// ModelServiceGroupID is set when the run named a Model Service.
	ModelServiceGroupID string
	// APIKey is the key the endpoint takes (the execution's own); it is sealed with the run,
	// never stored in its document.
	APIKey string
}

// secretKeys are request fields never stored in the document (the key is sealed apart).
var secretKeys = map[string]bool{"api_key": true}

// BuildRun makes the queued run a validated request creates: the request's fields as sent (no
// api_key), defaults, the resolved timeout at the top level, the user's intent in `benchmark`,
// the estimate in `timing`, and the target's context. The defaults are applied here, once.
func BuildRun(id string, req events.EvaluateRunRequest, raw map[string]json.RawMessage, target Target) *Run {
	sent := make(map[string]json.RawMessage, len(raw))
	for k, v := range raw {
		if !secretKeys[k] {
			sent[k] = v
		}
	}
	run := &Run{}
	if doc, err := marshal(sent); err != nil || run.UnmarshalJSON(doc) != nil {
		run = &Run{} // raw is what DecodeStrictFields read: it always decodes
	}
	run.Kind, run.ID, run.Status, run.CreatedAt = "benchmark", id, StatusQueued, Now()
	d := WithDefaults(req.BenchmarkSpec)
	run.Harness, run.Workload, run.Parallelism, run.HarnessMemoryGiB = d.Harness, d.Workload, d.Parallelism, d.HarnessMemoryGiB
	if len(req.Matrix) > 0 {
		run.WarmupRequests = d.WarmupRequests
	}
	timing := Estimate(req.BenchmarkSpec)
	run.WaitTimeoutSeconds = ptr(timing.TimeoutSeconds)
	run.Timing = &timing
	run.Benchmark = benchmarkBlock(d, req.BenchmarkSpec)
	if run.BenchmarkSource == nil && run.Extra["benchmark_source"] == nil {
		run.BenchmarkSource = &events.BenchmarkSource{Repository: ptr(DefaultRepository), Revision: ptr(DefaultRevision)}
	}
	run.BenchmarkRuntime = json.RawMessage(`{}`)
	run.DeploymentExecutionID = ptr(target.ExecutionID)
	run.ClusterSessionID = ptr(target.ClusterSessionID)
	if target.ClusterID != "" {
		run.ClusterID = ptr(target.ClusterID)
	}
	run.DeploymentOwnership = ptr(orDefault(target.Ownership, "existing-endpoint"))
	run.Model = ptr(target.Model)
	run.Namespace = nullable(target.Namespace)
	run.Endpoint = ptr(target.Endpoint)
	run.EndpointUsed = ptr(target.Endpoint) // where the traffic goes: a Model Service's member, a kubernetes-service baseline's Service
	run.Deployment, _ = marshal(map[string]any{"name": orDefault(target.Name, target.ExecutionID),
		"namespace": run.Namespace, "endpoint": target.Endpoint})
	run.Internal.Model, run.Internal.Endpoint = target.Model, target.Endpoint
	return run
}

// Benchmark is a run's benchmark block: the user's intent with every key present, the defaults
// applied (a matrix without stages shows the stages it runs), null where unset; the wait
// timeout stays as asked (null: automatic). A block stored by an older version without a key
// reads with that key's default.
type Benchmark struct {
	Harness            string                    `json:"harness"`
	Workload           string                    `json:"workload"`
	Parallelism        int                       `json:"parallelism"`
	WaitTimeoutSeconds *int                      `json:"wait_timeout_seconds"`
	HarnessMemoryGiB   float64                   `json:"harness_memory_gib"`
	Matrix             []events.MatrixPoint      `json:"matrix"`
	ConcurrencyStages  []events.ConcurrencyStage `json:"concurrency_stages"`
	WarmupRequests     int                       `json:"warmup_requests"`
	SharedPrefix       *events.SharedPrefix      `json:"shared_prefix"`
	WorkloadYAML       *string                   `json:"workload_yaml"`
	AcceleratorProfile *string                   `json:"accelerator_profile"`
	StorageClassName   *string                   `json:"storage_class_name"`
	Repetitions        int                       `json:"repetitions,omitempty" doc:"1-20; a block stored before repetitions existed reads as 1"`
}

// UnmarshalJSON reads a stored block, filling in the defaults of keys it lacks.
func (b *Benchmark) UnmarshalJSON(doc []byte) error {
	var spec events.BenchmarkSpec
	if err := json.Unmarshal(doc, &spec); err != nil {
		return err
	}
	*b = *benchmarkBlock(WithDefaults(spec), spec)
	b.ConcurrencyStages = spec.ConcurrencyStages // as stored
	if b.ConcurrencyStages == nil {
		b.ConcurrencyStages = []events.ConcurrencyStage{}
	}
	return nil
}

// Spec is the block as a benchmark spec (defaults filled in).
func (b *Benchmark) Spec() events.BenchmarkSpec {
	return events.BenchmarkSpec{Harness: ptr(b.Harness), Workload: ptr(b.Workload), WorkloadYAML: b.WorkloadYAML,
		Parallelism: ptr(b.Parallelism), WaitTimeoutSeconds: b.WaitTimeoutSeconds, HarnessMemoryGiB: ptr(b.HarnessMemoryGiB),
		AcceleratorProfile: b.AcceleratorProfile, StorageClassName: b.StorageClassName, Matrix: b.Matrix,
		ConcurrencyStages: b.ConcurrencyStages, WarmupRequests: ptr(b.WarmupRequests), SharedPrefix: b.SharedPrefix,
		Repetitions: ptr(b.Repetitions)}
}

// BenchmarkBlock is a benchmark block as the API echoes it (Benchmark).
func BenchmarkBlock(spec events.BenchmarkSpec) json.RawMessage {
	doc, _ := marshal(benchmarkBlock(WithDefaults(spec), spec))
	return doc
}

// benchmarkBlock is the user's intent with defaults: every key present, null where unset.
func benchmarkBlock(d, asked events.BenchmarkSpec) *Benchmark {
	matrix, stages := d.Matrix, d.ConcurrencyStages
	if matrix == nil {
		matrix = []events.MatrixPoint{}
	}
	if len(matrix) > 0 && len(stages) == 0 {
		stages = DefaultConcurrencyStages
	}
	if stages == nil {
		stages = []events.ConcurrencyStage{}
	}
	return &Benchmark{Harness: *d.Harness, Workload: *d.Workload, Parallelism: *d.Parallelism,
		WaitTimeoutSeconds: asked.WaitTimeoutSeconds, HarnessMemoryGiB: *d.HarnessMemoryGiB,
		Matrix: matrix, ConcurrencyStages: stages, WarmupRequests: *d.WarmupRequests,
		SharedPrefix: d.SharedPrefix, WorkloadYAML: d.WorkloadYAML,
		AcceleratorProfile: d.AcceleratorProfile, StorageClassName: d.StorageClassName,
		Repetitions: *d.Repetitions}
}

// Spec is the run's benchmark block as a spec (the user's intent, defaults filled in).
func (r *Run) Spec() (events.BenchmarkSpec, error) {
	if r.Benchmark == nil {
		return events.BenchmarkSpec{}, fmt.Errorf("evalrun: run %s has no readable benchmark block", r.ID)
	}
	return r.Benchmark.Spec(), nil
}

// TimeoutSeconds is the resolved per-invocation limit (600 for a record without one).
func (r *Run) TimeoutSeconds() int {
	if r.WaitTimeoutSeconds != nil && *r.WaitTimeoutSeconds > 0 {
		return *r.WaitTimeoutSeconds
	}
	return 600
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func nullable(s string) rawjson.Opt[string] {
	if s == "" {
		return rawjson.Null[string]()
	}
	return rawjson.Some(s)
}
