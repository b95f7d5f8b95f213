package workflow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/comparison"
	"github.com/lensfn/lensfn/runtime/deployconfig"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/rawjson"
)

// source is one plan's configuration, resolved.
type source struct {
	artifact   inventory.Configuration
	deployment deployconfig.Deployment
}

// baselineBuild is a generated baseline deployment.
type baselineBuild struct {
	providerRef      string
	content          json.RawMessage
	customParameters []map[string]string
}

// NewEvaluation builds the queued workflow of a validated evaluation request: the request's
// fields as sent, defaults, the configuration snapshots and the generated cases. It saves
// nothing, so a refusal (404 for an unknown artifact, 409 for the P/D budget rule or an
// unsupported kubernetes-service baseline) leaves no trace.
func NewEvaluation(ctx context.Context, id string, req events.EvaluationCreateRequest, raw map[string]json.RawMessage,
	configurations ConfigurationSource) (*Workflow, error) {
	sources := make([]source, len(req.BenchmarkPlans))
	artifacts := map[string]string{}
	for i, p := range req.BenchmarkPlans {
		a, err := configurations(ctx, p.ConfigurationArtifactID)
		if err != nil {
			return nil, err
		}
		if !deployconfig.Known(a.ProviderRef) {
			return nil, problem.New(problem.CodeBadRequest, "benchmark_plans[%d]: configuration %s has provider %q, which Lensfn cannot deploy (%v)",
				i, a.ID, a.ProviderRef, deployconfig.Providers())
		}
		d, err := deployconfig.Parse(a.ProviderRef, a.Content)
		if err != nil {
			return nil, problem.New(problem.CodeConflict, "benchmark_plans[%d]: configuration %s can no longer be deployed: %v", i, a.ID, err)
		}
		sources[i] = source{artifact: a, deployment: d}
		artifacts[a.ID] = a.Checksum
	}
	cases, err := generateCases(req, sources)
	if err != nil {
		return nil, err
	}
	w := New(KindEvaluation, id, StatusQueued)
	w.CreatedAt = evalrun.Now()
	if err := w.merge(raw); err != nil {
		return nil, problem.New(problem.CodeBadRequest, "the evaluation request's fields do not fit a workflow: %v", err)
	}
	w.Kind, w.ID, w.Status = "workflow", id, StatusQueued
	w.DeploymentOwnership = rawjson.Some(OwnershipEvaluation)
	w.Name = rawjson.Some(strOr(req.Name, "Evaluation"))
	w.CompareConfigurations = rawjson.Some(boolOr(req.CompareConfigurations, true))
	w.Confidence = rawjson.Some(comparison.DefaultConfidence)
	if req.Confidence != nil {
		w.Confidence = rawjson.Some(*req.Confidence)
	}
	if w.Runtime == nil {
		w.Runtime = mustJSON(map[string]string{"http_proxy": "", "https_proxy": "", "no_proxy": ""})
	}
	w.BenchmarkRuntime = json.RawMessage(`{}`)
	w.DeploymentSource = json.RawMessage(`{}`)
	w.ConfigurationArtifacts = map[string]json.RawMessage{}
	for id, sum := range artifacts {
		w.ConfigurationArtifacts[id] = mustJSON(sum)
	}
	w.Report = ReportJSON("null")
	w.SetCases(cases)
	return w, nil
}

// generator holds the state of one case generation.
type generator struct {
	guides      []*Case
	sameGuide   map[string][]*Case // kubernetes-service baselines by guide case id
	independent []*Case
	byChecksum  map[string]*Case
	baselines   int
}

func generateCases(req events.EvaluationCreateRequest, sources []source) ([]*Case, error) {
	g := &generator{sameGuide: map[string][]*Case{}, byChecksum: map[string]*Case{}}
	for i, p := range req.BenchmarkPlans {
		p.Benchmark = withRepetitions(p.Benchmark, req.Repetitions)
		for j := range p.Scenarios {
			if p.Scenarios[j].Benchmark != nil {
				p.Scenarios[j].Benchmark = withRepetitions(p.Scenarios[j].Benchmark, req.Repetitions)
			}
		}
		if err := g.plan(i, p, sources[i]); err != nil {
			return nil, err
		}
	}
	var out []*Case
	for _, guide := range g.guides {
		out = append(out, guide)
		out = append(out, g.sameGuide[guide.ID]...)
	}
	out = append(out, g.independent...)
	// A plan without its configuration still has kubernetes-service baselines refused above, so
	// every baseline is placed.
	return out, nil
}

// workload is one benchmark of a plan (the plan's own, or one scenario's).
type workload struct {
	id, scenarioID, scenarioName string
	benchmark                    json.RawMessage
	sla                          *events.SLATargets
	guideID                      string
}

func (g *generator) plan(i int, p events.BenchmarkPlan, src source) error {
	pid := planID(p, i)
	var workloads []workload
	planBenchmark := benchmarkJSON(p.Benchmark)
	if len(p.Scenarios) == 0 {
		workloads = append(workloads, workload{id: pid, benchmark: planBenchmark, sla: p.SLATargets, guideID: fmt.Sprintf("guide-%d", i+1)})
	}
	for j, s := range p.Scenarios {
		w := workload{id: pid + "--" + scenarioID(s, j), scenarioID: scenarioID(s, j), benchmark: planBenchmark, sla: p.SLATargets,
			guideID: fmt.Sprintf("guide-%d-%d", i+1, j+1)}
		w.scenarioName = w.scenarioID
		if s.Name != nil {
			w.scenarioName = *s.Name
		}
		if s.Benchmark != nil {
			w.benchmark = benchmarkJSON(s.Benchmark)
		}
		if s.SLATargets != nil {
			w.sla = s.SLATargets
		}
		workloads = append(workloads, w)
	}
	types := planTypes(p)
	includeGuide := boolOr(p.IncludeConfiguration, true)
	if slices.Contains(types, BaselineKubernetesService) {
		if !includeGuide {
			return problem.New(problem.CodeConflict, "benchmark_plans[%d]: same-pod comparison requires the full configuration "+
				"(kubernetes-service needs include_configuration)", i)
		}
		if !slices.Contains(kubernetesServiceProviders, src.deployment.ProviderRef) {
			return problem.New(problem.CodeConflict, "benchmark_plans[%d]: provider %s does not expose a kubernetes-service baseline endpoint (only %v do)",
				i, src.deployment.ProviderRef, kubernetesServiceProviders)
		}
	}
	builds := map[string]baselineBuild{}
	for _, t := range types {
		if t == BaselineKubernetesService {
			continue
		}
		b, err := buildBaseline(t, planParameters(p, t), src)
		if err != nil {
			return fmt.Errorf("benchmark_plans[%d] baseline %s: %w", i, t, err)
		}
		builds[t] = b
	}
	for _, w := range workloads {
		var guide *Case
		if includeGuide {
			guide = g.guide(pid, p, src, w)
			g.guides = append(g.guides, guide)
		}
		var linked []string
		for _, t := range types {
			params := parametersJSON(planParameters(p, t))
			bench := withBaseline(w.benchmark, t, params)
			var c *Case
			if t == BaselineKubernetesService {
				c = g.newBaseline(pid, t, params, bench, w)
				c.DependentGuideCaseID = rawjson.Some(guide.ID)
				c.ConfigurationArtifactID = rawjson.Null[string]()
				c.DeploymentConfiguration = json.RawMessage("null")
				c.PreserveDeployment = rawjson.Some(false)
				g.sameGuide[guide.ID] = append(g.sameGuide[guide.ID], c)
			} else {
				b := builds[t]
				key := checksumOf(b.content, b.customParameters, bench)
				if existing := g.byChecksum[key]; existing != nil {
					c = existing
					if !slices.Contains(c.WorkloadIDs, w.id) {
						c.WorkloadIDs = append(c.WorkloadIDs, w.id)
					}
				} else {
					c = g.newBaseline(pid, t, params, bench, w)
					c.DependentGuideCaseID = rawjson.Null[string]()
					c.ConfigurationArtifactID = rawjson.Null[string]()
					c.PreserveDeployment = rawjson.Some(false) // an independent baseline is never preserved
					c.CustomParameters = mustJSON(b.customParameters)
					sum, _ := inventory.Checksum(b.content)
					c.DeploymentConfiguration = mustJSON(map[string]any{
						"schema_version": inventory.ConfigurationSchemaV1, "type": inventory.ConfigurationBaseline,
						"format": inventory.ConfigurationFormat, "provider_ref": b.providerRef, "checksum": sum,
						"content": b.content, "provenance": map[string]any{"system_generated": true,
							"source_configuration_artifact_id": src.artifact.ID, "baseline_type": t}})
					g.byChecksum[key] = c
					g.independent = append(g.independent, c)
				}
			}
			linked = append(linked, c.ID)
		}
		if guide != nil {
			if len(linked) > 0 {
				guide.BaselineCaseID = rawjson.Some(linked[0])
			} else {
				guide.BaselineCaseID = rawjson.Null[string]()
			}
			if linked == nil {
				linked = []string{}
			}
			guide.BaselineCaseIDs = linked
		}
	}
	return nil
}

func (g *generator) guide(pid string, p events.BenchmarkPlan, src source, w workload) *Case {
	c := &Case{ID: w.guideID, Kind: "guide", Status: CaseQueued, WorkloadIDs: []string{w.id}, Benchmark: w.benchmark,
		SLATargets: mustJSON(w.sla), DeploymentRunID: rawjson.Null[string](), EvaluationRunID: rawjson.Null[string](),
		ConfigurationArtifactID: rawjson.Some(src.artifact.ID), BenchmarkPlanID: rawjson.Some(pid), DeploymentGroupID: rawjson.Some(pid + ":guide"),
		PreserveDeployment: rawjson.Some(boolOr(p.PreserveDeployment, false)), DeploymentName: rawjson.Some(strOr(p.DeploymentName, src.artifact.Name))}
	setScenario(c, w)
	a := src.artifact
	c.DeploymentConfiguration = mustJSON(map[string]any{"schema_version": a.SchemaVersion, "type": a.Type, "format": a.Format,
		"provider_ref": a.ProviderRef, "checksum": a.Checksum, "content": a.Content, "provenance": a.Provenance})
	return c
}

func (g *generator) newBaseline(pid, t string, params map[string]any, bench json.RawMessage, w workload) *Case {
	g.baselines++
	c := &Case{ID: "baseline-" + strconv.Itoa(g.baselines), Kind: "baseline", Status: CaseQueued, WorkloadIDs: []string{w.id},
		Benchmark: bench, SLATargets: mustJSON(w.sla), DeploymentRunID: rawjson.Null[string](), EvaluationRunID: rawjson.Null[string](),
		BenchmarkPlanID: rawjson.Some(pid), DeploymentGroupID: rawjson.Some(pid + ":baseline:" + t), BaselineType: rawjson.Some(t),
		BaselineParameters: mustJSON(params)}
	setScenario(c, w)
	return c
}

func setScenario(c *Case, w workload) {
	if w.scenarioID == "" {
		c.ScenarioID, c.ScenarioName = rawjson.Null[string](), rawjson.Null[string]()
		return
	}
	c.ScenarioID, c.ScenarioName = rawjson.Some(w.scenarioID), rawjson.Some(w.scenarioName)
}

// buildBaseline derives a baseline type's deployment from the plan's configuration.
func buildBaseline(t string, params events.ComparisonCoreParameters, src source) (baselineBuild, error) {
	d := src.deployment
	providerRef, profile := deployconfig.ProviderOptimizedBaseline, baselineProfiles[t]
	if t == BaselineDirectVLLM {
		providerRef, profile = deployconfig.ProviderBaselineVLLM, ""
	}
	var custom []map[string]string
	arg := func(name, value string) {
		custom = append(custom, map[string]string{"target": "decode", "kind": "argument", "name": name, "value": value})
	}
	if params.GPUMemoryUtilization != nil {
		arg("gpu-memory-utilization", strconv.FormatFloat(*params.GPUMemoryUtilization, 'g', -1, 64))
	}
	if params.BlockSize != nil {
		arg("block-size", strconv.Itoa(*params.BlockSize))
	}
	if params.MaxNumBatchedTokens != nil {
		arg("max-num-batched-tokens", strconv.Itoa(*params.MaxNumBatchedTokens))
	}
	if custom == nil {
		custom = []map[string]string{}
	}
	// The router-profile baselines of an optimized-baseline source keep its saved content and
	// change only the routing policy.
	if t != BaselineOptimized && profile != "" && d.ProviderRef == deployconfig.ProviderOptimizedBaseline && emptyParameters(params) {
		var content map[string]json.RawMessage
		if err := json.Unmarshal(src.artifact.Content, &content); err != nil {
			return baselineBuild{}, problem.New(problem.CodeConflict, "the source configuration is not a JSON object")
		}
		content["router"], _ = json.Marshal(map[string]string{"profile": profile})
		raw, _ := marshal(content)
		return baselineBuild{providerRef: providerRef, content: raw, customParameters: custom}, nil
	}
	tp := d.Content.Decode.TensorParallelSize
	if params.TensorParallelSize != nil {
		tp = *params.TensorParallelSize
	}
	replicas := d.Content.Decode.Replicas
	switch {
	case params.Replicas != nil:
		replicas = *params.Replicas // explicit replicas win, even over an unequal budget
	case d.Content.Prefill != nil:
		n, err := PDBaselineReplicas(d.Content.Prefill.Replicas, d.Content.Prefill.TensorParallelSize,
			d.Content.Decode.Replicas, d.Content.Decode.TensorParallelSize, tp)
		if err != nil {
			return baselineBuild{}, err
		}
		replicas = n
	}
	decode := map[string]any{"replicas": replicas, "tensor_parallel_size": tp}
	if v := d.Content.Decode.MaxNumSeqs; v > 0 {
		decode["max_num_seqs"] = v
	}
	if v := d.Content.Decode.MaxModelLen; v > 0 {
		decode["max_model_len"] = v
	}
	if params.MaxNumSeqs != nil {
		decode["max_num_seqs"] = *params.MaxNumSeqs
	}
	if params.MaxModelLen != nil {
		decode["max_model_len"] = *params.MaxModelLen
	}
	content := map[string]any{"model": map[string]string{"name": d.Content.Model.Name}, "decode": decode}
	simulator := map[string]any{}
	for k, v := range d.Content.Simulator {
		simulator[k] = v
	}
	if params.BlockSize != nil {
		simulator["block-size"] = *params.BlockSize
	}
	if len(simulator) > 0 {
		content["simulator"] = simulator
	}
	if d.Content.Runtime != nil && d.Content.Runtime.Image != "" {
		content["runtime"] = map[string]string{"image": d.Content.Runtime.Image}
	}
	if profile != "" {
		content["router"] = map[string]string{"profile": profile}
	}
	raw, _ := marshal(content)
	if _, err := deployconfig.Parse(providerRef, raw); err != nil {
		return baselineBuild{}, problem.New(problem.CodeConflict, "the generated %s baseline cannot be deployed: %v", t, err)
	}
	return baselineBuild{providerRef: providerRef, content: raw, customParameters: custom}, nil
}

// withRepetitions is spec with the evaluation's repetitions when it sets none of its own (a
// copy; spec itself is left alone).
func withRepetitions(spec *events.BenchmarkSpec, reps *int) *events.BenchmarkSpec {
	if reps == nil || spec != nil && spec.Repetitions != nil {
		return spec
	}
	out := events.BenchmarkSpec{}
	if spec != nil {
		out = *spec
	}
	out.Repetitions = reps
	return &out
}

// benchmarkJSON is a case's benchmark block: the plan's (or scenario's) spec with the defaults
// applied, every key present, as a run echoes it.
func benchmarkJSON(spec *events.BenchmarkSpec) json.RawMessage {
	if spec == nil {
		spec = &events.BenchmarkSpec{}
	}
	return evalrun.BenchmarkBlock(*spec)
}

// parametersJSON is a baseline's parameters without its nulls.
func parametersJSON(p events.ComparisonCoreParameters) map[string]any {
	var out map[string]any
	raw, _ := marshal(p)
	_ = json.Unmarshal(raw, &out)
	if out == nil {
		out = map[string]any{}
	}
	return out
}

// withBaseline is a baseline case's benchmark: the workload's, with its type and parameters.
func withBaseline(bench json.RawMessage, t string, params map[string]any) json.RawMessage {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(bench, &m)
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	m["baseline_type"], _ = marshal(t)
	m["baseline_parameters"], _ = marshal(params)
	raw, _ := marshal(m)
	return raw
}

// checksumOf identifies a baseline deployment with its benchmark: model, decode, runtime,
// simulator flags and router all sit in content.
func checksumOf(content json.RawMessage, custom []map[string]string, bench json.RawMessage) string {
	raw, _ := marshal(map[string]any{"content": content, "custom_parameters": custom, "benchmark": bench})
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}
