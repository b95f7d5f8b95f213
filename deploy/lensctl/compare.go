package lensctl

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"
	"github.com/spf13/cobra"

	"github.com/lensfn/lensfn/runtime/simtask"
)

// comparedMetric is one row of a side-by-side comparison.
type comparedMetric struct {
	Metric string   `json:"metric"`
	Left   *float64 `json:"left"`
	Right  *float64 `json:"right"`
	// Ratio is right/left, null when either is missing or left is 0.
	Ratio *float64 `json:"ratio"`
}

// comparison is two tasks or two runs side by side.
type comparison struct {
	Kind        string           `json:"kind"` // "simulation-task" or "benchmark-run"
	Left, Right string           `json:"-"`
	LeftID      string           `json:"left_id"`
	RightID     string           `json:"right_id"`
	Metrics     []comparedMetric `json:"metrics"`
}

func (a *app) compareCmd() *cobra.Command {
	var evaluation string
	c := &cobra.Command{Use: "compare [A B | --evaluation ID]",
		Short: "Two simulation tasks or two benchmark runs side by side, or an evaluation's comparison report (exit 4 when a case missed its SLA)",
		Args: args(func(cmd *cobra.Command, argv []string) error {
			if (evaluation == "") != (len(argv) == 2) {
				return errors.New("compare takes two task or run ids, or --evaluation ID")
			}
			return nil
		}),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if evaluation != "" {
				d, err := a.getDetails(cmd, evaluation)
				if err != nil {
					return err
				}
				if d.Report == nil {
					return exitError{ExitFailed, "evaluation " + evaluation + " has no comparison report yet (status " + d.Workflow.str("status") + ")"}
				}
				if err := a.printComparison(d.Report); err != nil {
					return err
				}
				return reportOutcome(d.Report)
			}
			cmp, err := a.sideBySide(cmd, argv[0], argv[1])
			if err != nil {
				return err
			}
			return a.printer.print(cmp, func(t table.Writer) {
				t.Style().Format.Header = text.FormatDefault // the ids stay as they are
				t.AppendHeader(table.Row{"METRIC", "A " + argv[0], "B " + argv[1], "B/A"})
				for _, m := range cmp.Metrics {
					t.AppendRow(table.Row{m.Metric, num(m.Left), num(m.Right), num(m.Ratio)})
				}
			})
		}}
	c.Flags().StringVar(&evaluation, "evaluation", "", "show this evaluation's comparison report")
	return c
}

func num(v *float64) string {
	if v == nil {
		return "-"
	}
	return human(*v)
}

// sideBySide reads a and b as simulation tasks, or as benchmark runs when a is no task.
func (a *app) sideBySide(cmd *cobra.Command, left, right string) (comparison, error) {
	ctx := cmd.Context()
	var lt, rt simtask.Task
	err := a.client.JSON(ctx, "GET", taskPath(left), nil, nil, &lt)
	var apiErr *APIError
	if err == nil {
		if err := a.client.JSON(ctx, "GET", taskPath(right), nil, nil, &rt); err != nil {
			return comparison{}, fmt.Errorf("%s is a simulation task, so %s must be one too: %w", left, right, err)
		}
		return comparison{Kind: "simulation-task", LeftID: left, RightID: right,
			Metrics: compareMaps(taskFigures(&lt), taskFigures(&rt), taskMetricOrder)}, nil
	}
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound {
		return comparison{}, err
	}
	var lr, rr record
	if err := a.client.JSON(ctx, "GET", runPath(left), nil, nil, &lr); err != nil {
		return comparison{}, fmt.Errorf("%s is neither a simulation task nor a benchmark run: %w", left, err)
	}
	if err := a.client.JSON(ctx, "GET", runPath(right), nil, nil, &rr); err != nil {
		return comparison{}, fmt.Errorf("%s is a benchmark run, so %s must be one too: %w", left, right, err)
	}
	return comparison{Kind: "benchmark-run", LeftID: left, RightID: right,
		Metrics: compareMaps(runFigures(lr), runFigures(rr), runMetricOrder)}, nil
}

var taskMetricOrder = []string{"total_requests", "success_rate", "throughput_rps", "throughput_tps",
	"ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms", "latency_p50_ms", "latency_p99_ms"}

func taskFigures(t *simtask.Task) map[string]float64 {
	out := map[string]float64{}
	if t.Result == nil {
		return out
	}
	var s map[string]any
	remarshal(t.Result.Summary, &s)
	for _, k := range []string{"total_requests", "success_rate", "throughput_rps", "throughput_tps"} {
		if v, ok := s[k].(float64); ok {
			out[k] = v
		}
	}
	for _, d := range []string{"ttft", "tpot", "latency"} {
		dist, _ := s[d].(map[string]any)
		for _, p := range []string{"p50", "p99"} {
			if v, ok := dist[p+"_ms"].(float64); ok {
				out[d+"_"+p+"_ms"] = v
			}
		}
	}
	return out
}

var runMetricOrder = []string{"request_count", "success_rate", "throughput_tps", "throughput_rps", "ttft_ms", "ttft_p99_ms",
	"tpot_ms", "tpot_p99_ms", "itl_ms", "chunk_gap_ms", "request_latency_ms", "request_latency_p99_ms", "benchmark_time_seconds"}

func runFigures(r record) map[string]float64 {
	out := map[string]float64{}
	m, _ := r["metrics"].(map[string]any)
	for _, k := range runMetricOrder {
		if v, ok := m[k].(float64); ok {
			out[k] = v
		}
	}
	dists, _ := m["latency_distributions"].(map[string]any)
	for _, d := range []string{"ttft", "tpot", "request_latency"} {
		dist, _ := dists[d].(map[string]any)
		if v, ok := dist["p99_ms"].(float64); ok {
			out[d+"_p99_ms"] = v
		}
	}
	return out
}

func compareMaps(left, right map[string]float64, order []string) []comparedMetric {
	out := make([]comparedMetric, 0, len(order))
	for _, k := range order {
		m := comparedMetric{Metric: k}
		if v, ok := left[k]; ok {
			m.Left = &v
		}
		if v, ok := right[k]; ok {
			m.Right = &v
		}
		if m.Left != nil && m.Right != nil && *m.Left != 0 {
			r := math.Round(*m.Right / *m.Left * 10000) / 10000
			m.Ratio = &r
		}
		if m.Left != nil || m.Right != nil {
			out = append(out, m)
		}
	}
	return out
}

// deltaMetrics are the delta_percent columns a comparison report row shows.
var deltaMetrics = []string{"throughput_tps", "ttft_ms", "tpot_ms", "request_latency_ms"}

// printComparison shows a comparison report (version 2): a column per guide x baseline with
// its workload, SLA verdict, parity, the deltas and the geometric-mean ratio (so many metrics
// fit a terminal as rows, and the columns wrap when there are many comparisons), then the
// topology ratios.
func (a *app) printComparison(report record) error {
	if a.printer.format != "table" {
		return a.printer.print(report, nil)
	}
	comps, _ := report["comparisons"].([]any)
	labels := []string{"workload", "guide", "baseline", "SLA", "parity"}
	for _, m := range deltaMetrics {
		labels = append(labels, "Δ% "+m)
	}
	labels = append(labels, "geomean throughput ratio")
	columns := make([][]string, 0, len(comps))
	for _, c := range comps {
		row, _ := c.(map[string]any)
		r := record(row)
		parity, _ := r["parity"].(map[string]any)
		parityText := fmt.Sprint(orEmpty(parity["valid"]))
		if r.str("baseline_case_id") == "" && r.str("baseline_type") == "" {
			parityText = "-" // a guide alone: nothing to be on a par with
		} else if reasons, _ := parity["reasons"].([]any); len(reasons) > 0 {
			texts := make([]string, len(reasons))
			for i, x := range reasons {
				texts[i] = fmt.Sprint(x)
			}
			parityText += ": " + strings.Join(texts, "; ")
		}
		col := []string{r.str("workload_id"), r.str("guide"), r.str("baseline_type"), slaText(r.slaMet()), parityText}
		deltas, _ := r["delta_percent"].(map[string]any)
		sig, _ := r["significance"].(map[string]any)
		sigMetrics, _ := sig["metrics"].(map[string]any)
		for _, m := range deltaMetrics {
			col = append(col, fmt.Sprint(deltaCell(deltas[m], sigMetrics[m])))
		}
		columns = append(columns, append(col, fmt.Sprint(geomean(r, "throughput_tps"))))
	}
	t := a.table()
	t.Style().Format.Header = text.FormatDefault
	header := table.Row{"COMPARISON"}
	for i := range columns {
		header = append(header, fmt.Sprintf("%d", i+1))
	}
	t.AppendHeader(header)
	for k, label := range labels {
		row := table.Row{label}
		for _, col := range columns {
			row = append(row, col[k])
		}
		t.AppendRow(row)
	}
	t.Render()
	topo, _ := report["topology_comparisons"].([]any)
	if len(topo) > 0 {
		tt := a.table()
		tt.AppendHeader(table.Row{"LEFT", "RIGHT", "throughput_tps L/R", "ttft_ms L/R", "tpot_ms L/R", "request_latency_ms L/R"})
		for _, c := range topo {
			row, _ := c.(map[string]any)
			ratio, _ := row["ratio"].(map[string]any)
			tt.AppendRow(table.Row{row["left_case_id"], row["right_case_id"], orDash(ratio["throughput_tps"]), orDash(ratio["ttft_ms"]),
				orDash(ratio["tpot_ms"]), orDash(ratio["request_latency_ms"])})
		}
		tt.Render()
	}
	return nil
}

// deltaCell is a metric's change: with repetitions the change of their means, its
// interval (at the evaluation's confidence) and the verdict ("-12.5 [-20.1, -4.8] better"),
// else the delta_percent.
func deltaCell(delta, significance any) any {
	sig, _ := significance.(map[string]any)
	change, ok := sig["change_percent"].(float64)
	if !ok {
		if v, ok := sig["verdict"].(string); ok && delta != nil {
			return human(delta) + " " + v
		}
		return orDash(delta)
	}
	return fmt.Sprintf("%s [%s, %s] %v", human(change), human(sig["change_percent_ci_low"]), human(sig["change_percent_ci_high"]), sig["verdict"])
}

// orDash is a value for a table: "-" when missing, numbers rounded for people.
func orDash(v any) any { return human(v) }

// geomean is the matrix (or else rate-stage) geometric-mean ratio of a metric.
func geomean(r record, metric string) any {
	for _, key := range []string{"matrix_statistics", "rate_stage_statistics"} {
		stats, _ := r[key].(map[string]any)
		g, _ := stats["geometric_mean_ratio"].(map[string]any)
		if v, ok := g[metric]; ok {
			return human(v)
		}
	}
	return "-"
}

// reportOutcome is ExitSLAMissed when any comparison's guide missed its SLA.
func reportOutcome(report record) error {
	comps, _ := report["comparisons"].([]any)
	for _, c := range comps {
		row, _ := c.(map[string]any)
		if met := record(row).slaMet(); met != nil && !*met {
			return exitError{ExitSLAMissed, fmt.Sprintf("guide %s missed its SLA on %s", record(row).str("guide"), record(row).str("workload_id"))}
		}
	}
	return nil
}
