package comparison

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/evalrun"
)

// deltaMetrics are the metrics of a comparison's delta_percent, in order.
var deltaMetrics = []string{"throughput_tps", "input_throughput_tps", "throughput_rps", "ttft_ms", "itl_ms", "tpot_ms",
	"request_latency_ms", "error_rate", "maximum_stable_qps", "slo_goodput_rps", "prefix_cache_hit_rate", "token_load_cv"}

// topologyMetrics are the metrics of a topology comparison's ratio, in order.
var topologyMetrics = []string{"throughput_tps", "input_throughput_tps", "throughput_rps", "ttft_ms", "itl_ms", "tpot_ms",
	"request_latency_ms", "error_rate"}

// stageKeys are the per-stage results kept in a case's metrics and left out of the report's
// metrics objects.
const (
	matrixResultsKey    = "matrix_results"
	rateStageResultsKey = "rate_stage_results"
)

// prepared is a case with its metrics normalised to plain JSON values.
type prepared struct {
	c       Case
	facts   Facts
	metrics map[string]any // without the stage results; non-finite numbers are null
	matrix  []any
	rates   []any
}

func prepare(c Case) *prepared {
	p := &prepared{c: c, facts: c.Facts, metrics: map[string]any{}}
	if m, ok := normalize(c.Metrics).(map[string]any); ok {
		p.metrics = m
	}
	p.matrix, _ = p.metrics[matrixResultsKey].([]any)
	p.rates, _ = p.metrics[rateStageResultsKey].([]any)
	shown := make(map[string]any, len(p.metrics))
	for k, v := range p.metrics {
		if k != matrixResultsKey && k != rateStageResultsKey {
			shown[k] = finiteOnly(v)
		}
	}
	p.metrics = shown
	if p.facts.Guide == nil && c.ProviderRef != "" {
		p.facts.Guide = ptr(c.ProviderRef)
	}
	if p.facts.Benchmark == nil {
		p.facts.Benchmark = c.Benchmark
	}
	if b, ok := normalize(p.facts.Benchmark).(map[string]any); ok {
		p.facts.Benchmark = b
	} else {
		p.facts.Benchmark = map[string]any{}
	}
	return p
}

// Options are an evaluation's choices of what its report holds.
type Options struct {
	// CompareConfigurations adds a topology comparison per pair of guides of the same scenario.
	CompareConfigurations bool
	// Confidence is the level of the comparisons' intervals (0: DefaultConfidence).
	Confidence float64
}

// Build makes the comparison v2 report of an evaluation's cases (lens-evaluation.md §2): one
// comparison per guide and each of its baselines (one with baseline null for a guide without
// any), and the topology comparisons opts asks for. now is the report's generated_at.
func Build(cases []Case, opts Options, now time.Time) Report {
	if opts.Confidence == 0 {
		opts.Confidence = DefaultConfidence
	}
	all := make([]*prepared, len(cases))
	byID := make(map[string]*prepared, len(cases))
	for i, c := range cases {
		all[i] = prepare(c)
		if _, seen := byID[c.ID]; !seen {
			byID[c.ID] = all[i]
		}
	}
	var guides []*prepared
	for _, p := range all {
		if p.c.Role == RoleGuide {
			guides = append(guides, p)
		}
	}
	r := Report{GeneratedAt: isoformat(now), ComparisonVersion: Version, Comparisons: []Comparison{}, TopologyComparisons: []TopologyComparison{}}
	for _, g := range guides {
		var baselines []*prepared
		for _, id := range g.c.BaselineCaseIDs {
			if b, ok := byID[id]; ok {
				baselines = append(baselines, b)
			}
		}
		if len(baselines) == 0 {
			baselines = []*prepared{nil}
		}
		for _, b := range baselines {
			r.Comparisons = append(r.Comparisons, compare(g, b, opts.Confidence))
		}
	}
	if opts.CompareConfigurations {
		for i, left := range guides {
			for _, right := range guides[i+1:] {
				if left.c.ScenarioID == right.c.ScenarioID {
					r.TopologyComparisons = append(r.TopologyComparisons, topology(left, right))
				}
			}
		}
	}
	return r
}

func compare(g, b *prepared, confidence float64) Comparison {
	c := Comparison{
		WorkloadID: g.c.WorkloadID, ScenarioID: nullable(g.c.ScenarioID), ScenarioName: nullable(g.c.ScenarioName),
		SLA: guideSLA(g), Guide: g.facts.Guide,
		GuideConfiguration: g.facts, GuideCaseID: g.c.ID, Parity: Parity{},
		GuideMetrics: g.metrics, BaselineMetrics: map[string]any{}, DeltaPercent: Ordered[float64]{}, MechanismDeltaPercent: Ordered[float64]{},
	}
	if b == nil {
		return c
	}
	c.BaselineConfiguration = OptionalFacts{&b.facts}
	c.BaselineCaseID = ptr(b.c.ID)
	c.BaselineType = ptr(b.c.BaselineType)
	if b.c.BaselineType == "" {
		c.BaselineType = ptr(DefaultBaselineType)
	}
	c.Parity = parity(g.facts, b.facts)
	c.BaselineMetrics = b.metrics
	for _, m := range deltaMetrics {
		if d, ok := deltaPercent(g.metrics[m], b.metrics[m]); ok {
			c.DeltaPercent = append(c.DeltaPercent, Entry[float64]{m, d})
		}
	}
	gm, _ := g.metrics["mechanism_metrics"].(map[string]any)
	bm, _ := b.metrics["mechanism_metrics"].(map[string]any)
	var shared []string
	for k := range gm {
		if _, ok := bm[k]; ok {
			shared = append(shared, k)
		}
	}
	slices.Sort(shared)
	for _, k := range shared {
		if d, ok := deltaPercent(gm[k], bm[k]); ok {
			c.MechanismDeltaPercent = append(c.MechanismDeltaPercent, Entry[float64]{k, d})
		}
	}
	c.Mechanisms = mechanisms(gm, bm)
	c.MatrixStatistics, c.RateStageStatistics = statistics(g, b)
	c.Significance = significance(g.c.Bootstrap, b.c.Bootstrap, g.c.ID+"/"+b.c.ID, confidence)
	return c
}

// guideSLA is the guide's SLA verdict, with how many repetitions met each target when it had
// several.
func guideSLA(g *prepared) *events.SLAVerdict {
	targets := slaTargets(g.c.SLATargets)
	v := evalrun.EvaluateSLA(evalrun.Metrics(g.metrics), targets)
	if len(g.c.Repetitions) > 1 {
		evalrun.CountRepetitionsMet(v, g.c.Repetitions, targets)
	}
	return v
}

func topology(left, right *prepared) TopologyComparison {
	t := TopologyComparison{LeftCaseID: left.c.ID, RightCaseID: right.c.ID, Left: left.facts, Right: right.facts,
		LeftMetrics: left.metrics, RightMetrics: right.metrics, Ratio: Ordered[float64]{}}
	for _, m := range topologyMetrics {
		l, lok := number(left.metrics[m])
		r, rok := number(right.metrics[m])
		if lok && rok && r != 0 {
			if q := l / r; finite(q) {
				t.Ratio = append(t.Ratio, Entry[float64]{m, round(q, 4)})
			}
		}
	}
	t.MatrixStatistics, t.RateStageStatistics = statistics(left, right)
	return t
}

// statistics are the matrix and rate-stage statistics of a guide-role and a baseline-role case,
// each computed only when both sides have such results.
func statistics(g, b *prepared) (matrix, rate *Statistics) {
	if len(g.matrix) > 0 && len(b.matrix) > 0 {
		matrix = MatrixStatistics(g.matrix, b.matrix)
	}
	if len(g.rates) > 0 && len(b.rates) > 0 {
		rate = RateStageStatistics(g.rates, b.rates)
	}
	return matrix, rate
}

// parity compares a guide's and a baseline's configuration facts. Like-for-like is valid: the
// same model and runtime (named on both sides), the same accelerator (or none named on either
// side, as for two simulators), the same accelerator count and the same workload. A baseline
// case's benchmark carries baseline_type and baseline_parameters, which say how the baseline is
// deployed, not what load it is sent, so the workload check leaves them out. Each failed check
// gives a reason naming both values.
func parity(g, b Facts) Parity {
	ga, ba := g.Accelerators(), b.Accelerators()
	gw, bw := workloadOf(g.Benchmark), workloadOf(b.Benchmark)
	checks := &ParityChecks{
		Model:            g.Model != nil && *g.Model != "" && b.Model != nil && *g.Model == *b.Model,
		Runtime:          g.Runtime != nil && *g.Runtime != "" && b.Runtime != nil && *g.Runtime == *b.Runtime,
		AcceleratorType:  orEmpty(g.Accelerator) == orEmpty(b.Accelerator),
		AcceleratorCount: ga != nil && ba != nil && *ga == *ba,
		Workload:         reflect.DeepEqual(gw, bw),
	}
	valid := checks.Model && checks.Runtime && checks.AcceleratorType && checks.AcceleratorCount && checks.Workload
	reasons := []string{}
	differs := func(ok bool, name string, gv, bv any) {
		if !ok {
			reasons = append(reasons, fmt.Sprintf("%s differs: guide %s, baseline %s", name, shown(gv), shown(bv)))
		}
	}
	differs(checks.Model, "model", g.Model, b.Model)
	differs(checks.Runtime, "runtime", g.Runtime, b.Runtime)
	differs(checks.AcceleratorType, "accelerator type", g.Accelerator, b.Accelerator)
	differs(checks.AcceleratorCount, "accelerator count", ga, ba)
	if !checks.Workload {
		keys := map[string]bool{}
		for k := range gw {
			keys[k] = true
		}
		for k := range bw {
			keys[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			differs(reflect.DeepEqual(gw[k], bw[k]), "workload "+k, gw[k], bw[k])
		}
	}
	return Parity{Valid: valid, Checks: checks, Reasons: reasons, GuideAccelerators: ga, BaselineAccelerators: ba}
}

// deploymentKeys are the keys of a baseline case's benchmark that say how it is deployed.
var deploymentKeys = []string{"baseline_type", "baseline_parameters"}

// workloadOf is a benchmark block without its deployment keys.
func workloadOf(bench map[string]any) map[string]any {
	out := make(map[string]any, len(bench))
	for k, v := range bench {
		if !slices.Contains(deploymentKeys, k) {
			out[k] = v
		}
	}
	return out
}

// shown is a fact as a reason names it: its JSON, or "none" when unknown.
func shown(v any) string {
	v = normalize(v)
	if v == nil {
		return "none"
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(raw)
}

func orEmpty(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// deltaPercent is round((g-b)/b*100, 2) when both are numbers and b is not 0.
func deltaPercent(gv, bv any) (float64, bool) {
	g, gok := number(gv)
	b, bok := number(bv)
	if !gok || !bok || b == 0 {
		return 0, false
	}
	d := (g - b) / b * 100
	if !finite(d) {
		return 0, false
	}
	return round(d, 2), true
}

// slaTargets reads a case's sla_targets; a field of the wrong type is ignored (targets were
// validated when the evaluation was created).
func slaTargets(m map[string]any) *events.SLATargets {
	t := &events.SLATargets{}
	f := func(key string) *float64 {
		if v, ok := number(normalize(m[key])); ok {
			return &v
		}
		return nil
	}
	s := func(key string) *string {
		if v, ok := m[key].(string); ok {
			return &v
		}
		return nil
	}
	t.TTFTMs, t.TTFTPercentile = f("ttft_ms"), s("ttft_percentile")
	t.TPOTMs, t.TPOTPercentile = f("tpot_ms"), s("tpot_percentile")
	t.ThroughputMinTPS, t.SuccessRateMinPercent = f("throughput_min_tps"), f("success_rate_min_percent")
	return t
}

// isoformat is Python's datetime.isoformat of a UTC time: microseconds only when not zero.
func isoformat(t time.Time) string {
	t = t.UTC()
	if t.Nanosecond()/1000 == 0 {
		return t.Format("2006-01-02T15:04:05+00:00")
	}
	return t.Format("2006-01-02T15:04:05.000000+00:00")
}

// normalize turns a decoded or in-memory value (typed maps, slices, integers, structs) into
// plain JSON values: map[string]any, []any, float64, string, bool and nil. Non-finite numbers
// stay as they are (they never match and never make a ratio).
func normalize(v any) any {
	switch x := v.(type) {
	case nil, string, bool, float64:
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return f
		}
		return x.String()
	case json.RawMessage:
		var d any
		if json.Unmarshal(x, &d) == nil {
			return d
		}
		return nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil
		}
		return normalize(rv.Elem().Interface())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return float64(rv.Uint())
	case reflect.Float32, reflect.Float64:
		return rv.Float()
	case reflect.Bool:
		return rv.Bool()
	case reflect.String:
		return rv.String()
	case reflect.Map:
		if rv.IsNil() {
			return nil
		}
		if rv.Type().Key().Kind() != reflect.String {
			break
		}
		out := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			out[it.Key().String()] = normalize(it.Value().Interface())
		}
		return out
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return nil
		}
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = normalize(rv.Index(i).Interface())
		}
		return out
	}
	// Structs and anything else: their JSON form.
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var d any
	if json.Unmarshal(data, &d) != nil {
		return nil
	}
	return d
}

// finiteOnly replaces non-finite numbers with null, so a metrics object always encodes.
func finiteOnly(v any) any {
	switch x := v.(type) {
	case float64:
		if !finite(x) {
			return nil
		}
	case map[string]any:
		for k, e := range x {
			x[k] = finiteOnly(e)
		}
	case []any:
		for i, e := range x {
			x[i] = finiteOnly(e)
		}
	}
	return v
}

// number is a JSON number that is finite (bools and strings are not numbers).
func number(v any) (float64, bool) {
	f, ok := v.(float64)
	return f, ok && finite(f)
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// round rounds to places decimals the way Python's round does: the nearest decimal of the
// exact binary value, ties to even.
func round(x float64, places int) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(x, 'f', places, 64), 64)
	if err != nil {
		return x
	}
	if r == 0 {
		return 0 // no negative zero
	}
	return r
}

func ptr[T any](v T) *T { return &v }

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
