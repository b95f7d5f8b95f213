package lensctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"
	"github.com/spf13/cobra"
)

const evalAPI = "/api/v1/evaluate"

func runPath(id string) string      { return evalAPI + "/runs/" + url.PathEscape(id) }
func workflowPath(id string) string { return evalAPI + "/workflow-runs/" + url.PathEscape(id) }

// record is a run or workflow as the API returns it: an open JSON object.
type record map[string]any

func (r record) str(key string) string {
	switch v := r[key].(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}

// slaMet is the record's SLA verdict: met, missed, or unknown (no targets, unmeasured).
func (r record) slaMet() *bool {
	sla, _ := r["sla"].(map[string]any)
	met, ok := sla["met"].(bool)
	if !ok {
		return nil
	}
	return &met
}

func slaText(met *bool) string {
	switch {
	case met == nil:
		return "-"
	case *met:
		return "met"
	}
	return "MISSED"
}

func (a *app) evalCmd() *cobra.Command {
	return group("eval", "Evaluations: benchmark runs, workflows and multi-configuration evaluations",
		group("runs", "Benchmark runs", a.runCreate(), a.runList(), a.runGet(), a.runWatch(), a.runCancel(), a.runDelete(), a.runReport()),
		group("workflows", "Evaluation workflows", a.workflowList(), a.workflowGet(), a.workflowDetails(), a.workflowWatch(), a.workflowReport(),
			a.postCmd("cancel", "Cancel a workflow", workflowPath), a.postCmd("retry", "Retry a failed or cancelled workflow", workflowPath), a.workflowDelete()),
		group("evaluations", "Multi-configuration evaluations", a.evaluationCreate(), a.evaluationList(), a.evaluationGet()))
}

// readBody reads a JSON body from a file, or stdin for "-".
func (a *app) readBody(file string) (json.RawMessage, error) {
	if file == "" {
		return nil, usageError{errors.New("needs -f FILE (the JSON body, - for stdin)")}
	}
	var r io.Reader = a.in
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, usageError{err}
		}
		defer f.Close()
		r = f
	}
	raw, err := io.ReadAll(io.LimitReader(r, maxBodyFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > maxBodyFileBytes || !json.Valid(raw) {
		return nil, usageError{fmt.Errorf("%s is not a JSON document of at most %d bytes", file, maxBodyFileBytes)}
	}
	return raw, nil
}

var runHeader = table.Row{"ID", "STATUS", "MODEL", "WORKLOAD", "SLA", "CREATED"}

func runRow(r record) table.Row {
	// The spec's default workload is stored even when matrix or shared_prefix replaces it.
	workload := r.str("workload")
	switch {
	case r["matrix"] != nil:
		workload = "matrix"
	case r["shared_prefix"] != nil:
		workload = "shared_prefix"
	case r["workload_yaml"] != nil:
		workload = "workload_yaml"
	}
	// The status with, while it runs, its phase and progress ("running matrix-0 50.0%").
	status := r.str("status")
	if !caseFinished(status) {
		if phase := r.str("phase"); phase != "" {
			status += " " + phase
		}
		if p, ok := r["progress_percent"].(float64); ok && p > 0 {
			status += " " + percentText(p)
		}
	}
	return table.Row{r.str("id"), status, r.str("model"), workload, slaText(r.slaMet()), when(r.str("created_at"))}
}

// when is an RFC 3339 time as tables show it, to the minute ("2026-12-05 03:29"); what does
// not parse is shown as it is.
func when(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.Format("2006-01-02 15:04")
}

// printRun shows a run with its headline metrics and SLA checks.
func (a *app) printRun(r record) error {
	if a.printer.format != "table" {
		return a.printer.print(r, nil)
	}
	// One run is shown field by field (a row of its 36-character id and five more columns does
	// not fit an 80-column terminal); lists keep a row per run.
	if err := a.printer.print(r, func(t table.Writer) {
		t.Style().Format.Header = text.FormatDefault // the id stays as it is
		t.AppendHeader(table.Row{"RUN", r.str("id")})
		row := runRow(r)
		for i, name := range runHeader[1:] {
			t.AppendRow(table.Row{strings.ToLower(fmt.Sprint(name)), row[i+1]})
		}
		if e := r.str("error"); e != "" {
			t.AppendRow(table.Row{"error", e})
		}
	}); err != nil {
		return err
	}
	m, _ := r["metrics"].(map[string]any)
	if len(m) > 0 {
		t := a.table()
		t.AppendHeader(table.Row{"METRIC", "VALUE"})
		for _, k := range []string{"request_count", "success_rate", "throughput_tps", "throughput_rps", "ttft_ms", "tpot_ms", "itl_ms", "chunk_gap_ms", "request_latency_ms", "benchmark_time_seconds", "repetitions"} {
			if v, ok := m[k]; ok && v != nil {
				t.AppendRow(table.Row{k, human(v)})
			}
		}
		t.Render()
	}
	sla, _ := r["sla"].(map[string]any)
	checks, _ := sla["checks"].(map[string]any)
	if len(checks) > 0 {
		t := a.table()
		t.AppendHeader(table.Row{"SLA CHECK", "TARGET", "ACTUAL", "UNIT", "VERDICT"})
		for _, name := range sortedKeys(checks) {
			c, _ := checks[name].(map[string]any)
			met, ok := c["met"].(bool)
			var verdict *bool
			if ok {
				verdict = &met
			}
			actual := "unavailable"
			if c["actual"] != nil {
				actual = human(c["actual"])
			}
			t.AppendRow(table.Row{strings.TrimSpace(name + " " + fmt.Sprint(orEmpty(c["percentile"]))), human(c["target"]), actual, orEmpty(c["unit"]), slaText(verdict)})
		}
		t.Render()
	}
	return nil
}

func orEmpty(v any) any {
	if v == nil {
		return ""
	}
	return v
}

func (a *app) table() table.Writer { return a.printer.table() }

func (a *app) runCreate() *cobra.Command {
	var file string
	var watch bool
	c := &cobra.Command{Use: "create -f FILE", Short: "Start a benchmark run from an EvaluateRunRequest body (a file, or - for stdin)", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			body, err := a.readBody(file)
			if err != nil {
				return err
			}
			var run record
			if err := a.client.JSON(cmd.Context(), "POST", evalAPI+"/runs", nil, body, &run); err != nil {
				return err
			}
			if watch {
				fmt.Fprintf(a.errOut, "created benchmark run %s\n", run.str("id"))
				return a.watchRun(cmd, run.str("id"))
			}
			return a.printRun(run)
		}}
	c.Flags().StringVarP(&file, "file", "f", "", "the run's JSON body (- for stdin)")
	c.Flags().BoolVarP(&watch, "watch", "w", false, "watch the run until it finishes (exit code by its outcome and SLA)")
	return c
}

func (a *app) runList() *cobra.Command {
	return &cobra.Command{Use: "list", Short: "List benchmark runs, newest first", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var out struct {
				Items []record `json:"items"`
			}
			if err := a.client.JSON(cmd.Context(), "GET", evalAPI+"/runs", nil, nil, &out); err != nil {
				return err
			}
			return a.printer.print(out, func(t table.Writer) {
				t.AppendHeader(runHeader)
				dropWhenNarrow(t, "CREATED", "WORKLOAD", "MODEL")
				for _, r := range out.Items {
					t.AppendRow(runRow(r))
				}
			})
		}}
}

func (a *app) runGet() *cobra.Command {
	return &cobra.Command{Use: "get ID", Short: "Show a benchmark run: status, headline metrics, SLA checks", Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			var run record
			if err := a.client.JSON(cmd.Context(), "GET", runPath(argv[0]), nil, nil, &run); err != nil {
				return err
			}
			return a.printRun(run)
		}}
}

func (a *app) runWatch() *cobra.Command {
	return &cobra.Command{Use: "watch ID",
		Short: "Follow a run until it finishes (exit 0 succeeded, 1 failed, 3 cancelled, 4 succeeded but the SLA was missed)",
		Args:  args(cobra.ExactArgs(1)), RunE: func(cmd *cobra.Command, argv []string) error { return a.watchRun(cmd, argv[0]) }}
}

// watchRun follows the run's event stream and maps how it ended to the exit code.
func (a *app) watchRun(cmd *cobra.Command, id string) error {
	end, err := a.follow(cmd, runPath(id)+"/events")
	if err != nil {
		return err
	}
	var run record
	if err := a.client.JSON(cmd.Context(), "GET", runPath(id), nil, nil, &run); err == nil {
		if err := a.printRun(run); err != nil {
			return err
		}
	}
	return runOutcome("benchmark run "+id, end.Status, end.finalMessage(), end.SLA != nil && end.SLA.Met != nil && !*end.SLA.Met)
}

// runOutcome is the exit of a finished run or workflow.
func runOutcome(what, status, final string, slaMissed bool) error {
	switch status {
	case "succeeded":
		if slaMissed {
			return exitError{ExitSLAMissed, what + " succeeded but missed its SLA"}
		}
		return nil
	case "cancelled", "deleted":
		return exitError{ExitCancelled, what + " " + final}
	}
	return exitError{ExitFailed, what + " " + final}
}

func (a *app) runCancel() *cobra.Command {
	return a.postCmd("cancel", "Cancel a queued or running benchmark run", runPath)
}

// postCmd is "VERB ID": POST <path(ID)>/VERB without a body, printing the answer's status.
func (a *app) postCmd(verb, short string, path func(string) string) *cobra.Command {
	return &cobra.Command{Use: verb + " ID", Short: short, Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			var out record
			if err := a.client.JSON(cmd.Context(), "POST", path(argv[0])+"/"+verb, nil, nil, &out); err != nil {
				return err
			}
			if out.str("id") == "" {
				out["id"] = argv[0]
			}
			return a.printStatus(out)
		}}
}

func (a *app) printStatus(out record) error {
	return a.printer.print(out, func(t table.Writer) {
		t.AppendHeader(table.Row{"ID", "STATUS"})
		t.AppendRow(table.Row{out.str("id"), out.str("status")})
	})
}

func (a *app) deleteCmd(short string, path func(string) string) *cobra.Command {
	return &cobra.Command{Use: "delete ID", Short: short, Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if err := a.client.JSON(cmd.Context(), "DELETE", path(argv[0]), nil, nil, nil); err != nil {
				return err
			}
			return a.printStatus(record{"id": argv[0], "status": "deleted"})
		}}
}

func (a *app) runDelete() *cobra.Command {
	return a.deleteCmd("Delete a finished benchmark run and its artifacts", runPath)
}

func (a *app) runReport() *cobra.Command {
	return a.reportCmd("run", runPath)
}

var workflowHeader = table.Row{"ID", "NAME", "STATUS", "CASES", "CREATED"}

func workflowRow(w record) table.Row {
	cases, _ := w["cases"].([]any)
	return table.Row{w.str("id"), w.str("name"), w.str("status"), len(cases), when(w.str("created_at"))}
}

func (a *app) listWorkflows(cmd *cobra.Command, keep func(record) bool) error {
	var out struct {
		Items []record `json:"items"`
	}
	if err := a.client.JSON(cmd.Context(), "GET", evalAPI+"/workflow-runs", nil, nil, &out); err != nil {
		return err
	}
	kept := out.Items[:0]
	for _, w := range out.Items {
		if keep(w) {
			kept = append(kept, w)
		}
	}
	out.Items = kept
	return a.printer.print(out, func(t table.Writer) {
		t.AppendHeader(workflowHeader)
		dropWhenNarrow(t, "CREATED", "CASES", "NAME")
		for _, w := range out.Items {
			t.AppendRow(workflowRow(w))
		}
	})
}

func (a *app) workflowList() *cobra.Command {
	return &cobra.Command{Use: "list", Short: "List evaluation workflows", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.listWorkflows(cmd, func(record) bool { return true })
		}}
}

func (a *app) printWorkflow(w record) error {
	return a.printer.print(w, func(t table.Writer) {
		t.AppendHeader(workflowHeader)
		t.AppendRow(workflowRow(w))
		cases, _ := w["cases"].([]any)
		for _, c := range cases {
			if m, ok := c.(map[string]any); ok {
				cr := record(m)
				t.AppendRow(table.Row{"  " + cr.str("id"), cr.str("kind"), cr.str("status"), cr.str("evaluation_run_id"), ""})
			}
		}
	})
}

func (a *app) workflowGet() *cobra.Command {
	return &cobra.Command{Use: "get ID", Short: "Show a workflow and its cases", Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			var w record
			if err := a.client.JSON(cmd.Context(), "GET", workflowPath(argv[0]), nil, nil, &w); err != nil {
				return err
			}
			return a.printWorkflow(w)
		}}
}

// details is GET /workflow-runs/{id}/details.
type details struct {
	Workflow record   `json:"workflow"`
	Cases    []record `json:"cases"`
	Report   record   `json:"report"`
}

func (a *app) getDetails(cmd *cobra.Command, id string) (details, error) {
	var d details
	err := a.client.JSON(cmd.Context(), "GET", workflowPath(id)+"/details", nil, nil, &d)
	return d, err
}

func (a *app) workflowDetails() *cobra.Command {
	return &cobra.Command{Use: "details ID", Short: "Show a workflow with its cases' runs and its comparison report", Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			d, err := a.getDetails(cmd, argv[0])
			if err != nil {
				return err
			}
			return a.printDetails(d)
		}}
}

func (a *app) printDetails(d details) error {
	if a.printer.format != "table" {
		return a.printer.print(d, nil)
	}
	if err := a.printWorkflow(d.Workflow); err != nil {
		return err
	}
	t := a.table()
	t.AppendHeader(table.Row{"CASE", "KIND", "STATUS", "RUN", "RUN STATUS"})
	for _, c := range d.Cases {
		cs, _ := c["case"].(map[string]any)
		ev, _ := c["evaluation"].(map[string]any)
		t.AppendRow(table.Row{record(cs).str("id"), record(cs).str("kind"), record(cs).str("status"), record(ev).str("id"), record(ev).str("status")})
	}
	t.Render()
	if d.Report != nil {
		return a.printComparison(d.Report)
	}
	return nil
}

func (a *app) workflowWatch() *cobra.Command {
	return &cobra.Command{Use: "watch ID",
		Short: "Follow a workflow until it finishes (exit 0 succeeded, 1 failed, 3 cancelled, 4 succeeded but a comparison missed its SLA)",
		Args:  args(cobra.ExactArgs(1)), RunE: func(cmd *cobra.Command, argv []string) error { return a.watchWorkflow(cmd, argv[0]) }}
}

// watchWorkflow follows the workflow's event stream (the bar counts finished cases) and maps
// how it ended to the exit code.
func (a *app) watchWorkflow(cmd *cobra.Command, id string) error {
	end, err := a.follow(cmd, workflowPath(id)+"/events")
	if err != nil {
		return err
	}
	var w record
	if err := a.client.JSON(cmd.Context(), "GET", workflowPath(id), nil, nil, &w); err == nil {
		if err := a.printWorkflow(w); err != nil {
			return err
		}
	}
	return runOutcome("workflow "+id, end.Status, end.finalMessage(), end.SLAMet != nil && !*end.SLAMet)
}

// workflowReport downloads the evaluation's comparison report page (the only artifact a
// workflow has).
func (a *app) workflowReport() *cobra.Command {
	var dest string
	c := &cobra.Command{Use: "report ID", Short: "Download an evaluation's comparison report (report-html) to a file", Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.download(cmd, workflowPath(argv[0]), argv[0], "report-html", dest)
		}}
	c.Flags().StringVar(&dest, "file", "", "where to write it (default <id>-report.html)")
	return c
}

func (a *app) workflowDelete() *cobra.Command {
	return a.deleteCmd("Delete a finished workflow", workflowPath)
}

func (a *app) evaluationCreate() *cobra.Command {
	var file string
	c := &cobra.Command{Use: "create -f FILE", Short: "Start a multi-configuration evaluation from an EvaluationCreateRequest body", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			body, err := a.readBody(file)
			if err != nil {
				return err
			}
			var w record
			if err := a.client.JSON(cmd.Context(), "POST", evalAPI+"/evaluations", nil, body, &w); err != nil {
				return err
			}
			return a.printWorkflow(w)
		}}
	c.Flags().StringVarP(&file, "file", "f", "", "the evaluation's JSON body (- for stdin)")
	return c
}

// isEvaluation tells a multi-configuration evaluation (it deploys configuration artifacts)
// from a single-model workflow.
func isEvaluation(w record) bool {
	arts, _ := w["configuration_artifacts"].(map[string]any)
	return len(arts) > 0
}

func (a *app) evaluationList() *cobra.Command {
	return &cobra.Command{Use: "list", Short: "List multi-configuration evaluations", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return a.listWorkflows(cmd, isEvaluation) }}
}

func (a *app) evaluationGet() *cobra.Command {
	return &cobra.Command{Use: "get ID", Short: "Show an evaluation: cases, runs and its comparison report (exit 4 when a case missed its SLA)",
		Args: args(cobra.ExactArgs(1)), RunE: func(cmd *cobra.Command, argv []string) error {
			d, err := a.getDetails(cmd, argv[0])
			if err != nil {
				return err
			}
			if err := a.printDetails(d); err != nil {
				return err
			}
			return reportOutcome(d.Report)
		}}
}
