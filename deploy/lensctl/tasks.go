package lensctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"
	"github.com/spf13/cobra"

	"github.com/lensfn/lensfn/runtime/simtask"
)

// maxBodyFileBytes bounds a task body read from a file or stdin.
const maxBodyFileBytes = 1 << 20

func (a *app) tasksCmd() *cobra.Command {
	return group("tasks", "Simulation tasks", a.taskCreate(), a.taskList(), a.taskGet(), a.taskWatch(),
		a.taskStop(), a.taskRerun(), a.taskDelete(), a.taskReport())
}

func taskPath(id string) string { return simAPI + "/tasks/" + url.PathEscape(id) }

func taskRow(t *simtask.Task) table.Row {
	created := ""
	if t.CreatedAt != nil {
		created = t.CreatedAt.Time().Format("2006-01-02 15:04")
	}
	return table.Row{t.ID, t.Name, t.Status, fmt.Sprintf("%.1f%%", t.ProgressPercent), t.ModelName, t.Prompt.Dataset.Name, created}
}

var taskHeader = table.Row{"ID", "NAME", "STATUS", "PROGRESS", "MODEL", "DATASET", "CREATED"}

// printTask shows one task field by field, as one run is: a row of seven columns does not fit
// an 80-column terminal without breaking its words; lists keep a row per task.
func (a *app) printTask(t *simtask.Task) error {
	return a.printer.print(t, func(tw table.Writer) {
		tw.Style().Format.Header = text.FormatDefault // the id stays as it is
		tw.AppendHeader(table.Row{"TASK", t.ID})
		row := taskRow(t)
		for i, name := range taskHeader[1:] {
			tw.AppendRow(table.Row{strings.ToLower(fmt.Sprint(name)), row[i+1]})
		}
		if t.ErrorMessage != nil {
			tw.AppendRow(table.Row{"error", *t.ErrorMessage})
		}
	})
}

func (a *app) taskCreate() *cobra.Command {
	var file string
	var watch bool
	c := &cobra.Command{Use: "create -f FILE", Short: "Create a task from a JSON body (a file, or - for stdin)", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usageError{errors.New("create needs -f FILE (the task's JSON body, - for stdin)")}
			}
			var r io.Reader = a.in
			if file != "-" {
				f, err := os.Open(file)
				if err != nil {
					return usageError{err}
				}
				defer f.Close()
				r = f
			}
			raw, err := io.ReadAll(io.LimitReader(r, maxBodyFileBytes+1))
			if err != nil {
				return err
			}
			if len(raw) > maxBodyFileBytes || !json.Valid(raw) {
				return usageError{fmt.Errorf("%s is not a JSON document of at most %d bytes", file, maxBodyFileBytes)}
			}
			var out struct {
				TaskID string       `json:"task_id"`
				Task   simtask.Task `json:"task"`
			}
			if err := a.client.JSON(cmd.Context(), "POST", simAPI+"/tasks", nil, json.RawMessage(raw), &out); err != nil {
				return err
			}
			if watch {
				fmt.Fprintf(a.errOut, "created task %s\n", out.TaskID)
				return a.watch(cmd, out.TaskID)
			}
			return a.printTask(&out.Task)
		}}
	c.Flags().StringVarP(&file, "file", "f", "", "the task's JSON body (- for stdin)")
	c.Flags().BoolVarP(&watch, "watch", "w", false, "watch the task until it finishes (exit code by its outcome)")
	return c
}

func (a *app) taskList() *cobra.Command {
	var status, search string
	var limit, offset int
	c := &cobra.Command{Use: "list", Short: "List tasks, newest first", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{"limit": {strconv.Itoa(limit)}, "offset": {strconv.Itoa(offset)}}
			if status != "" {
				q.Set("status", status)
			}
			if search != "" {
				q.Set("search", search)
			}
			var out struct {
				Tasks  []simtask.Task `json:"tasks"`
				Total  int            `json:"total"`
				Counts map[string]int `json:"counts"`
			}
			if err := a.client.JSON(cmd.Context(), "GET", simAPI+"/tasks", q, nil, &out); err != nil {
				return err
			}
			return a.printer.print(out, func(t table.Writer) {
				t.AppendHeader(taskHeader)
				dropWhenNarrow(t, "CREATED", "DATASET", "PROGRESS", "NAME")
				for i := range out.Tasks {
					t.AppendRow(taskRow(&out.Tasks[i]))
				}
				t.AppendFooter(table.Row{"", fmt.Sprintf("%d of %d", len(out.Tasks), out.Total)})
			})
		}}
	c.Flags().StringVar(&status, "status", "", "statuses, comma-separated")
	c.Flags().StringVar(&search, "search", "", "text to search for")
	c.Flags().IntVar(&limit, "limit", 20, "tasks per page (1-500)")
	c.Flags().IntVar(&offset, "offset", 0, "tasks to skip")
	return c
}

func (a *app) taskGet() *cobra.Command {
	return &cobra.Command{Use: "get ID", Short: "Show a task", Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			var t simtask.Task
			if err := a.client.JSON(cmd.Context(), "GET", taskPath(argv[0]), nil, nil, &t); err != nil {
				return err
			}
			return a.showTask(&t)
		}}
}

// showTask prints a task with its result's headline numbers (the whole record with -o json|yaml).
func (a *app) showTask(t *simtask.Task) error {
	if a.printer.format != "table" {
		return a.printer.print(t, nil)
	}
	if err := a.printTask(t); err != nil {
		return err
	}
	if t.Result != nil {
		return a.printSummary(t.Result.Summary)
	}
	return nil
}

// printSummary shows the headline numbers of a result summary.
func (a *app) printSummary(raw json.RawMessage) error {
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil // a summary the client cannot read is shown by --output json
	}
	t := a.table()
	t.AppendHeader(table.Row{"RESULT", "VALUE"})
	for _, k := range []string{"total_requests", "successful_requests", "failed_requests", "success_rate", "throughput_rps", "throughput_tps"} {
		if v, ok := s[k]; ok {
			t.AppendRow(table.Row{k, human(v)})
		}
	}
	for _, k := range []string{"ttft", "tpot", "latency"} {
		if d, ok := s[k].(map[string]any); ok {
			t.AppendRow(table.Row{k + " p50/p99 ms", human(d["p50_ms"]) + " / " + human(d["p99_ms"])})
		}
	}
	t.Render()
	return nil
}

func (a *app) taskWatch() *cobra.Command {
	return &cobra.Command{Use: "watch ID", Short: "Follow a task's progress until it finishes (exit 0 completed, 1 failed, 3 cancelled)",
		Args: args(cobra.ExactArgs(1)), RunE: func(cmd *cobra.Command, argv []string) error { return a.watch(cmd, argv[0]) }}
}

// watch follows the task's event stream and maps the final status to the exit code.
func (a *app) watch(cmd *cobra.Command, id string) error {
	end, err := a.follow(cmd, taskPath(id)+"/events")
	if err != nil {
		return err
	}
	final := end.finalMessage()
	var t simtask.Task
	if err := a.client.JSON(cmd.Context(), "GET", taskPath(id), nil, nil, &t); err == nil {
		// A finished watch ends with the result's numbers, not only the status.
		if err := a.showTask(&t); err != nil {
			return err
		}
	}
	switch end.Status {
	case simtask.StatusCompleted:
		return nil
	case simtask.StatusCancelled, "deleted":
		return exitError{ExitCancelled, "task " + id + " " + final}
	}
	return exitError{ExitFailed, "task " + id + " " + final}
}

func (a *app) taskStop() *cobra.Command {
	return a.postCmd("stop", "Stop a queued or running task", taskPath)
}

func (a *app) taskRerun() *cobra.Command {
	var endpoint string
	c := &cobra.Command{Use: "rerun ID", Short: "Run a task again with the same settings", Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			body := map[string]any{}
			if endpoint != "" {
				body["endpoint_url"] = endpoint
			}
			var out struct {
				TaskID string       `json:"task_id"`
				Task   simtask.Task `json:"task"`
			}
			if err := a.client.JSON(cmd.Context(), "POST", taskPath(argv[0])+"/rerun", nil, body, &out); err != nil {
				return err
			}
			return a.printTask(&out.Task)
		}}
	c.Flags().StringVar(&endpoint, "endpoint-url", "", "run against another endpoint")
	return c
}

func (a *app) taskDelete() *cobra.Command {
	return a.deleteCmd("Delete a finished task and its artifacts", taskPath)
}

func (a *app) taskReport() *cobra.Command {
	return a.reportCmd("task", taskPath, "summary-json")
}
