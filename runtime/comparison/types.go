package comparison

import (
	"bytes"
	"encoding/json"
	"math"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/evalrun"
)

// Version is the report's comparison_version.
const Version = 2

// Case roles.
const (
	RoleGuide    = "guide"
	RoleBaseline = "baseline"
)

// DefaultBaselineType is a baseline's type when its case names none.
const DefaultBaselineType = "direct-vllm"

// Case is one evaluation case as the report reads it.
type Case struct {
	ID           string
	Role         string // RoleGuide or RoleBaseline
	ProviderRef  string // the facts' guide when Facts.Guide is unset
	ScenarioID   string // "" is null in the report
	ScenarioName string // "" is null in the report
	WorkloadID   string
	BaselineType string // a baseline's type; "" means DefaultBaselineType
	// BaselineCaseIDs are a guide's baselines; ids that name no case are skipped.
	BaselineCaseIDs []string
	Facts           Facts
	// Benchmark is the case's benchmark block (the facts' benchmark when Facts.Benchmark is nil).
	Benchmark map[string]any
	// Metrics is the run's whole metrics object, with matrix_results and rate_stage_results
	// (the run's per-stage results) in it; the report shows it without those two.
	Metrics map[string]any
	// SLATargets are the case's sla_targets (BenchmarkSlaTargets keys); nil: none.
	SLATargets map[string]any
	// Bootstrap is the run's bootstrap record (nil: none, and the comparison has no
	// significance); Repetitions are its repetitions' metrics (the SLA verdict counts how many
	// met each target).
	Bootstrap   *evalrun.Bootstrap
	Repetitions []evalrun.Metrics
}

// Facts are a case's configuration facts (§2); nil fields are null.
type Facts struct {
	ConfigurationArtifactID   *string        `json:"configuration_artifact_id"`
	Model                     *string        `json:"model"`
	Guide                     *string        `json:"guide"`
	GuideVariant              *string        `json:"guide_variant"`
	Runtime                   *string        `json:"runtime"`
	Accelerator               *string        `json:"accelerator"`
	Image                     *string        `json:"image"`
	Replicas                  *int           `json:"replicas"`
	TensorParallelSize        *int           `json:"tensor_parallel_size"`
	DecodeReplicas            *int           `json:"decode_replicas"`
	DecodeTensorParallelSize  *int           `json:"decode_tensor_parallel_size"`
	PrefillReplicas           *int           `json:"prefill_replicas"`
	PrefillTensorParallelSize *int           `json:"prefill_tensor_parallel_size"`
	Benchmark                 map[string]any `json:"benchmark"`
}

// Accelerators is replicas × TP, or for P/D (prefill replicas set) prefill replicas × prefill
// TP + decode replicas × decode TP; nil when a dimension is unknown.
func (f Facts) Accelerators() *int {
	if f.PrefillReplicas != nil {
		if f.PrefillTensorParallelSize == nil || f.DecodeReplicas == nil || f.DecodeTensorParallelSize == nil {
			return nil
		}
		n := *f.PrefillReplicas**f.PrefillTensorParallelSize + *f.DecodeReplicas**f.DecodeTensorParallelSize
		return &n
	}
	if f.Replicas == nil || f.TensorParallelSize == nil {
		return nil
	}
	n := *f.Replicas * *f.TensorParallelSize
	return &n
}

// Report is the comparison v2 report.
type Report struct {
	GeneratedAt         string               `json:"generated_at"`
	ComparisonVersion   int                  `json:"comparison_version"`
	Comparisons         []Comparison         `json:"comparisons"`
	TopologyComparisons []TopologyComparison `json:"topology_comparisons"`
}

// Comparison is one guide case against one of its baselines (or none).
type Comparison struct {
	WorkloadID            string             `json:"workload_id"`
	ScenarioID            *string            `json:"scenario_id"`
	ScenarioName          *string            `json:"scenario_name"`
	SLA                   *events.SLAVerdict `json:"sla"`
	Guide                 *string            `json:"guide"`
	GuideConfiguration    Facts              `json:"guide_configuration"`
	BaselineConfiguration OptionalFacts      `json:"baseline_configuration"`
	GuideCaseID           string             `json:"guide_case_id"`
	BaselineCaseID        *string            `json:"baseline_case_id"`
	BaselineType          *string            `json:"baseline_type"`
	Parity                Parity             `json:"parity"`
	GuideMetrics          map[string]any     `json:"guide_metrics"`
	BaselineMetrics       map[string]any     `json:"baseline_metrics"`
	DeltaPercent          Ordered[float64]   `json:"delta_percent"`
	// MechanismDeltaPercent has its keys sorted (the reference leaves the order unspecified).
	MechanismDeltaPercent Ordered[float64] `json:"mechanism_delta_percent"`
	MatrixStatistics      *Statistics      `json:"matrix_statistics"`
	RateStageStatistics   *Statistics      `json:"rate_stage_statistics"`
	// Significance holds the 95 % confidence intervals of the guide/baseline ratios and a
	// verdict per metric; null without a baseline or without both runs' bootstrap records.
	Significance *Significance `json:"significance"`
	// Mechanisms (after the reference's keys) names the serving mechanisms whose evidence
	// differs (queueing, batch size, preemptions, cache hits), largest difference first: empty
	// when none does or a run has no evidence, null without a baseline.
	Mechanisms []Mechanism `json:"mechanisms"`
}

// TopologyComparison compares two guide cases of one scenario (left in the guide role).
type TopologyComparison struct {
	LeftCaseID          string           `json:"left_case_id"`
	RightCaseID         string           `json:"right_case_id"`
	Left                Facts            `json:"left"`
	Right               Facts            `json:"right"`
	LeftMetrics         map[string]any   `json:"left_metrics"`
	RightMetrics        map[string]any   `json:"right_metrics"`
	Ratio               Ordered[float64] `json:"ratio"`
	MatrixStatistics    *Statistics      `json:"matrix_statistics"`
	RateStageStatistics *Statistics      `json:"rate_stage_statistics"`
}

// OptionalFacts are a baseline's facts; without a baseline (nil) they are {}.
type OptionalFacts struct{ *Facts }

// MarshalJSON writes {} for no facts.
func (o OptionalFacts) MarshalJSON() ([]byte, error) {
	if o.Facts == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(o.Facts)
}

// UnmarshalJSON reads {} (or null) as no facts.
func (o *OptionalFacts) UnmarshalJSON(data []byte) error {
	if isEmptyObject(data) {
		o.Facts = nil
		return nil
	}
	o.Facts = &Facts{}
	return json.Unmarshal(data, o.Facts)
}

// Parity says whether a guide and its baseline are comparable. Without a baseline Checks is nil
// and it is {valid: false, checks: {}} with no accelerator counts.
type Parity struct {
	Valid  bool
	Checks *ParityChecks
	// Reasons say, for each failed check, what differs and both sides' values (empty when
	// valid).
	Reasons              []string
	GuideAccelerators    *int
	BaselineAccelerators *int
}

// ParityChecks are the individual parity checks.
type ParityChecks struct {
	Model            bool `json:"model"`
	Runtime          bool `json:"runtime"`
	AcceleratorType  bool `json:"accelerator_type"`
	AcceleratorCount bool `json:"accelerator_count"`
	Workload         bool `json:"workload"`
}

type parityJSON struct {
	Valid                bool            `json:"valid"`
	Checks               json.RawMessage `json:"checks"`
	Reasons              []string        `json:"reasons"`
	GuideAccelerators    *int            `json:"guide_accelerators"`
	BaselineAccelerators *int            `json:"baseline_accelerators"`
}

// MarshalJSON writes the §2 shape.
func (p Parity) MarshalJSON() ([]byte, error) {
	if p.Checks == nil {
		return json.Marshal(struct {
			Valid  bool     `json:"valid"`
			Checks struct{} `json:"checks"`
		}{Valid: p.Valid})
	}
	checks, err := json.Marshal(p.Checks)
	if err != nil {
		return nil, err
	}
	reasons := p.Reasons
	if reasons == nil {
		reasons = []string{}
	}
	return json.Marshal(parityJSON{p.Valid, checks, reasons, p.GuideAccelerators, p.BaselineAccelerators})
}

// UnmarshalJSON reads the §2 shape (checks {} is no baseline).
func (p *Parity) UnmarshalJSON(data []byte) error {
	var raw parityJSON
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*p = Parity{Valid: raw.Valid, Reasons: raw.Reasons, GuideAccelerators: raw.GuideAccelerators, BaselineAccelerators: raw.BaselineAccelerators}
	if len(raw.Checks) > 0 && !isEmptyObject(raw.Checks) {
		p.Checks = &ParityChecks{}
		return json.Unmarshal(raw.Checks, p.Checks)
	}
	return nil
}

// Statistics are the matched-row statistics of matrix points or rate stages; a report holds
// null where nothing matched.
type Statistics struct {
	// CaseCount (matrix) or StageCount (rate stages) is the number of rows; exactly one is set.
	CaseCount  *int  `json:"case_count,omitempty"`
	StageCount *int  `json:"stage_count,omitempty"`
	Rows       []Row `json:"rows"`
	// Geometric means of the mean, p90 and p99 ratios by metric (metrics without ratios absent).
	GeometricMeanRatio    Values `json:"geometric_mean_ratio"`
	GeometricMeanRatioP90 Values `json:"geometric_mean_ratio_p90"`
	GeometricMeanRatioP99 Values `json:"geometric_mean_ratio_p99"`
	// SuiteNormalizedThroughputRatio is null when no matched pair qualifies.
	SuiteNormalizedThroughputRatio *float64 `json:"suite_normalized_throughput_ratio"`
	// GroupedRatio (matrix only) is the arithmetic mean of the mean ratios by isl, osl and
	// concurrency value.
	GroupedRatio *GroupedRatio `json:"grouped_ratio,omitempty"`
}

// Matrix says whether these are matrix statistics.
func (s *Statistics) Matrix() bool { return s.CaseCount != nil }

// Values map metric names to values in the reference's metric order; a null is a missing value
// (only the matrix rows' guide and baseline absolutes hold nulls).
type Values = Ordered[*float64]

// GroupedRatio holds the mean ratios by dimension value ("<value>" → metric → mean).
type GroupedRatio struct {
	ISL         Ordered[Values] `json:"isl"`
	OSL         Ordered[Values] `json:"osl"`
	Concurrency Ordered[Values] `json:"concurrency"`
}

// Row is one matched pair of stages.
type Row struct {
	// Dimensions are isl, osl, concurrency and num_requests (matrix) or rate and duration
	// (rate stages), as the guide side recorded them.
	Dimensions  Ordered[any]
	Guide       Values
	Baseline    Values
	Ratio       Values
	GuideP90    Values
	BaselineP90 Values
	RatioP90    Values
	GuideP99    Values
	BaselineP99 Values
	RatioP99    Values
}

// rowFields names a row's value keys in their order.
var rowFields = []string{"guide", "baseline", "ratio", "guide_p90", "baseline_p90", "ratio_p90", "guide_p99", "baseline_p99", "ratio_p99"}

func (r *Row) field(name string) *Values {
	switch name {
	case "guide":
		return &r.Guide
	case "baseline":
		return &r.Baseline
	case "ratio":
		return &r.Ratio
	case "guide_p90":
		return &r.GuideP90
	case "baseline_p90":
		return &r.BaselineP90
	case "ratio_p90":
		return &r.RatioP90
	case "guide_p99":
		return &r.GuideP99
	case "baseline_p99":
		return &r.BaselineP99
	case "ratio_p99":
		return &r.RatioP99
	}
	return nil
}

// MarshalJSON writes the dimensions, then guide, baseline, ratio and their p90 and p99 forms.
func (r Row) MarshalJSON() ([]byte, error) {
	out := make(Ordered[any], 0, len(r.Dimensions)+len(rowFields))
	out = append(out, r.Dimensions...)
	for _, name := range rowFields {
		v := *r.field(name)
		if v == nil {
			v = Values{}
		}
		out = append(out, Entry[any]{name, v})
	}
	return out.MarshalJSON()
}

// UnmarshalJSON reads a row; keys other than the value keys are dimensions.
func (r *Row) UnmarshalJSON(data []byte) error {
	var raw Ordered[json.RawMessage]
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*r = Row{}
	for _, e := range raw {
		if f := r.field(e.Key); f != nil {
			if err := json.Unmarshal(e.Value, f); err != nil {
				return err
			}
			continue
		}
		var v any
		if err := json.Unmarshal(e.Value, &v); err != nil {
			return err
		}
		r.Dimensions = append(r.Dimensions, Entry[any]{e.Key, v})
	}
	return nil
}

func isEmptyObject(data []byte) bool {
	t := bytes.TrimSpace(data)
	if bytes.Equal(t, []byte("null")) {
		return true
	}
	if len(t) < 2 || t[0] != '{' || t[len(t)-1] != '}' {
		return false
	}
	return len(bytes.TrimSpace(t[1:len(t)-1])) == 0
}

// FactsFrom reads configuration facts from a map with the §2 keys (as a workflow record holds
// them): strings stay strings, integral numbers of any Go numeric type become ints, the
// benchmark stays an object; anything else, and absent keys, are null.
func FactsFrom(m map[string]any) Facts {
	s := func(key string) *string {
		if v, ok := m[key].(string); ok {
			return &v
		}
		return nil
	}
	n := func(key string) *int {
		v, ok := normalize(m[key]).(float64)
		if !ok || v != math.Trunc(v) || math.Abs(v) > 1<<31 {
			return nil
		}
		i := int(v)
		return &i
	}
	f := Facts{ConfigurationArtifactID: s("configuration_artifact_id"), Model: s("model"), Guide: s("guide"),
		GuideVariant: s("guide_variant"), Runtime: s("runtime"), Accelerator: s("accelerator"), Image: s("image"),
		Replicas: n("replicas"), TensorParallelSize: n("tensor_parallel_size"), DecodeReplicas: n("decode_replicas"),
		DecodeTensorParallelSize: n("decode_tensor_parallel_size"), PrefillReplicas: n("prefill_replicas"),
		PrefillTensorParallelSize: n("prefill_tensor_parallel_size")}
	if b, ok := normalize(m["benchmark"]).(map[string]any); ok {
		f.Benchmark = b
	}
	return f
}
