package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/comparison"
	"github.com/lensfn/lensfn/runtime/deployconfig"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/problem"
)

// Baseline types (reference/lens-evaluation.md §4).
const (
	BaselineDirectVLLM        = "direct-vllm"
	BaselineRouterNeutral     = "router-neutral"
	BaselineRouterRoundRobin  = "router-round-robin" // an alias of router-neutral
	BaselineLoadOnly          = "load-only"
	BaselineAffinityOnly      = "affinity-only"
	BaselineOptimized         = "optimized-baseline"
	BaselineKubernetesService = "kubernetes-service"
)

// BaselineTypes lists the accepted baseline types (aliases included).
var BaselineTypes = []string{BaselineDirectVLLM, BaselineRouterNeutral, BaselineRouterRoundRobin, BaselineLoadOnly,
	BaselineAffinityOnly, BaselineOptimized, BaselineKubernetesService}

// baselineProfiles maps the router-profile baseline types to the inference router's profiles.
var baselineProfiles = map[string]string{
	BaselineRouterNeutral: deployconfig.ProfileRandom,
	BaselineLoadOnly:      deployconfig.ProfileLoad,
	BaselineAffinityOnly:  deployconfig.ProfilePrefixAffinity,
	BaselineOptimized:     deployconfig.ProfileOptimized,
}

// kubernetesServiceProviders are the providers whose router exposes a plain balanced endpoint
// over the same pods (supports_kubernetes_service_baseline).
var kubernetesServiceProviders = []string{deployconfig.ProviderOptimizedBaseline, deployconfig.ProviderPrecisePrefix}

// Limits of an evaluation request.
const (
	MaxPlans         = 20
	MaxScenarios     = 20
	MaxBaselineTypes = 7
	MaxNameLength    = 200
)

// NormalizeBaselineType maps an alias to its type.
func NormalizeBaselineType(t string) string {
	if t == BaselineRouterRoundRobin {
		return BaselineRouterNeutral
	}
	return t
}

// PDBaselineReplicas is the P/D budget rule: a baseline matches the source's whole accelerator
// budget, (prefill replicas x prefill TP + decode replicas x decode TP) / baseline TP. The
// division must be exact and give 1..32, otherwise the evaluation is refused (409) before
// anything is saved; nothing is rounded or capped.
func PDBaselineReplicas(prefillReplicas, prefillTP, decodeReplicas, decodeTP, baselineTP int) (int, error) {
	for _, d := range []struct {
		name string
		v    int
	}{{"prefill replicas", prefillReplicas}, {"prefill tensor_parallel_size", prefillTP},
		{"decode replicas", decodeReplicas}, {"decode tensor_parallel_size", decodeTP}, {"baseline tensor_parallel_size", baselineTP}} {
		if d.v < 1 {
			return 0, problem.New(problem.CodeConflict, "the P/D budget rule needs a positive %s, not %d", d.name, d.v)
		}
	}
	budget := prefillReplicas*prefillTP + decodeReplicas*decodeTP
	if budget%baselineTP != 0 {
		return 0, problem.New(problem.CodeConflict, "the P/D source's budget of %d accelerators is not a multiple of the baseline tensor_parallel_size %d; "+
			"set baseline_parameters replicas explicitly", budget, baselineTP)
	}
	replicas := budget / baselineTP
	if replicas < 1 || replicas > deployconfig.MaxReplicas {
		return 0, problem.New(problem.CodeConflict, "the P/D budget rule gives %d baseline replicas, outside 1-%d; set baseline_parameters replicas explicitly",
			replicas, deployconfig.MaxReplicas)
	}
	return replicas, nil
}

// ConfigurationSource finds a configuration artifact (with its content) by id.
type ConfigurationSource func(ctx context.Context, id string) (inventory.Configuration, error)

// ParseEvaluation decodes a POST /evaluations body strictly (422 naming an unknown field).
func ParseEvaluation(body []byte) (events.EvaluationCreateRequest, map[string]json.RawMessage, error) {
	return problem.DecodeStrictFields[events.EvaluationCreateRequest](body)
}

type fieldErrors []problem.FieldError

func (f *fieldErrors) add(msg string, loc ...string) {
	*f = append(*f, problem.Field(msg, "value_error", append([]string{"body"}, loc...)...))
}

func (f *fieldErrors) intRange(v *int, lo, hi int, loc ...string) {
	if v != nil && (*v < lo || *v > hi) {
		f.add(fmt.Sprintf("must be an integer from %d to %d", lo, hi), loc...)
	}
}

// ValidateEvaluation checks the schema of an evaluation request (422 with every problem).
func ValidateEvaluation(req events.EvaluationCreateRequest) error {
	var fe fieldErrors
	if req.ClusterSessionID == "" || len(req.ClusterSessionID) > 128 {
		fe.add("must be 1-128 characters", "cluster_session_id")
	}
	if req.Name != nil && (*req.Name == "" || len(*req.Name) > MaxNameLength) {
		fe.add(fmt.Sprintf("must be 1-%d characters", MaxNameLength), "name")
	}
	if len(req.BenchmarkPlans) == 0 || len(req.BenchmarkPlans) > MaxPlans {
		fe.add(fmt.Sprintf("must hold 1-%d plans", MaxPlans), "benchmark_plans")
	}
	fe.intRange(req.Repetitions, 1, evalrun.MaxRepetitions, "repetitions")
	if c := req.Confidence; c != nil && !(*c >= comparison.MinConfidence && *c <= comparison.MaxConfidence) {
		fe.add(fmt.Sprintf("must be a number from %g to %g", comparison.MinConfidence, comparison.MaxConfidence), "confidence")
	}
	if len(req.BenchmarkPlans) > MaxPlans {
		return problem.Validation(fe...)
	}
	ids := map[string]bool{}
	for i, p := range req.BenchmarkPlans {
		loc := func(rest ...string) []string { return append([]string{"benchmark_plans", strconv.Itoa(i)}, rest...) }
		if p.ConfigurationArtifactID == "" || len(p.ConfigurationArtifactID) > 128 {
			fe.add("must be 1-128 characters", loc("configuration_artifact_id")...)
		}
		id := planID(p, i)
		if id == "" || len(id) > MaxNameLength || strings.Contains(id, "--") || strings.ContainsAny(id, "/:") {
			fe.add(fmt.Sprintf("must be 1-%d characters without '--', '/' or ':'", MaxNameLength), loc("id")...)
		} else if ids[id] {
			fe.add("plan ids must be unique", loc("id")...)
		}
		ids[id] = true
		if !boolOr(p.IncludeConfiguration, true) && !boolOr(p.IncludeBaseline, true) {
			fe.add("at least one configuration or comparison is required (include_configuration or include_baseline)", loc()...)
		}
		if len(p.BaselineTypes) > MaxBaselineTypes {
			fe.add(fmt.Sprintf("at most %d baseline types", MaxBaselineTypes), loc("baseline_types")...)
		}
		for j, t := range append(slices.Clone(p.BaselineTypes), strOr(p.BaselineType, BaselineDirectVLLM)) {
			if !slices.Contains(BaselineTypes, t) {
				l := loc("baseline_type")
				if j < len(p.BaselineTypes) {
					l = loc("baseline_types", strconv.Itoa(j))
				}
				fe.add(fmt.Sprintf("%q is not one of %s", t, strings.Join(BaselineTypes, ", ")), l...)
			}
		}
		for t, params := range p.BaselineParameters {
			if !slices.Contains(BaselineTypes, t) {
				fe.add(fmt.Sprintf("%q is not a baseline type", t), loc("baseline_parameters", t)...)
				continue
			}
			l := func(k string) []string { return loc("baseline_parameters", t, k) }
			fe.intRange(params.Replicas, 1, deployconfig.MaxReplicas, l("replicas")...)
			fe.intRange(params.TensorParallelSize, 1, deployconfig.MaxTensorParallel, l("tensor_parallel_size")...)
			fe.intRange(params.MaxModelLen, 1, deployconfig.MaxModelLen, l("max_model_len")...)
			fe.intRange(params.MaxNumSeqs, 1, deployconfig.MaxNumSeqs, l("max_num_seqs")...)
			fe.intRange(params.BlockSize, 1, 1024, l("block_size")...)
			fe.intRange(params.MaxNumBatchedTokens, 1, 1_000_000, l("max_num_batched_tokens")...)
			if g := params.GPUMemoryUtilization; g != nil && (*g < 0.1 || *g > 1.0) {
				fe.add("must be a number from 0.1 to 1.0", l("gpu_memory_utilization")...)
			}
		}
		if len(p.Scenarios) > MaxScenarios {
			fe.add(fmt.Sprintf("at most %d scenarios", MaxScenarios), loc("scenarios")...)
		}
		scenarioIDs := map[string]bool{}
		for j, s := range p.Scenarios {
			sid := scenarioID(s, j)
			if sid == "" || len(sid) > MaxNameLength || strings.ContainsAny(sid, "/:") {
				fe.add(fmt.Sprintf("must be 1-%d characters without '/' or ':'", MaxNameLength), loc("scenarios", strconv.Itoa(j), "id")...)
			} else if scenarioIDs[sid] {
				fe.add("scenario ids must be unique within a plan", loc("scenarios", strconv.Itoa(j), "id")...)
			}
			scenarioIDs[sid] = true
		}
	}
	if len(fe) > 0 {
		return problem.Validation(fe...)
	}
	if err := evalrun.CheckEvaluationSettings(req); err != nil {
		return err
	}
	for i, p := range req.BenchmarkPlans {
		specs := []*events.BenchmarkSpec{p.Benchmark}
		for _, s := range p.Scenarios {
			if s.Benchmark != nil {
				specs = append(specs, s.Benchmark)
			}
		}
		for _, spec := range specs {
			if spec == nil {
				continue
			}
			if err := evalrun.ValidateSpec(*spec); err != nil {
				return fmt.Errorf("benchmark_plans[%d]: %w", i, err)
			}
		}
	}
	return nil
}

func planID(p events.BenchmarkPlan, i int) string {
	if p.ID != nil {
		return *p.ID
	}
	return fmt.Sprintf("plan-%d", i+1)
}

func scenarioID(s events.Scenario, i int) string {
	if s.ID != nil {
		return *s.ID
	}
	return fmt.Sprintf("scenario-%d", i+1)
}

func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

func strOr(s *string, def string) string {
	if s == nil || *s == "" {
		return def
	}
	return *s
}

// planTypes returns a plan's baseline types, normalised and de-duplicated (none without
// include_baseline).
func planTypes(p events.BenchmarkPlan) []string {
	if !boolOr(p.IncludeBaseline, true) {
		return nil
	}
	types := p.BaselineTypes
	if len(types) == 0 {
		types = []string{strOr(p.BaselineType, BaselineDirectVLLM)}
	}
	var out []string
	for _, t := range types {
		t = NormalizeBaselineType(t)
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// planParameters returns the overrides of a baseline type (an alias's too), nulls dropped.
func planParameters(p events.BenchmarkPlan, baselineType string) events.ComparisonCoreParameters {
	if params, ok := p.BaselineParameters[baselineType]; ok {
		return params
	}
	for t, params := range p.BaselineParameters {
		if NormalizeBaselineType(t) == baselineType {
			return params
		}
	}
	return events.ComparisonCoreParameters{}
}

func emptyParameters(p events.ComparisonCoreParameters) bool {
	return p == events.ComparisonCoreParameters{}
}
