package lensctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/lensfn/lensfn/runtime/livesummary"
	"github.com/lensfn/lensfn/runtime/sse"
)

// progressEvent is what a status, case, log or end event of a task's, run's or workflow's stream
// carries.
type progressEvent struct {
	Status          string   `json:"status"`
	Phase           string   `json:"phase"`
	ProgressPercent *float64 `json:"progress_percent"` // none on a workflow's events
	ProgressMessage string   `json:"progress_message"`
	Line            string   `json:"line"`
	ErrorMessage    *string  `json:"error_message"` // tasks
	Error           *string  `json:"error"`         // runs
	Detail          string   `json:"detail"`
	SLA             *struct {
		Met *bool `json:"met"`
	} `json:"sla"`
	CaseID string `json:"case_id"` // a workflow's case event
	SLAMet *bool  `json:"sla_met"` // a workflow's end: false if a comparison missed its SLA
	// LiveMetrics is a benchmark run's live summary, on its status events.
	LiveMetrics *struct {
		Summary *livesummary.Snapshot `json:"summary"`
	} `json:"live_metrics"`
}

// liveLine is a status event's live summary in one line ("" when it has none yet).
func (ev progressEvent) liveLine() string {
	if ev.LiveMetrics == nil || ev.LiveMetrics.Summary == nil || ev.LiveMetrics.Summary.Requests == 0 {
		return ""
	}
	s := ev.LiveMetrics.Summary
	ms := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf("%.1f", *v)
	}
	return fmt.Sprintf("TTFT p50 %s / p99 %s ms, TPOT p50 %s ms, %.1f req/s, %.1f tok/s, errors %.1f%%",
		ms(s.TTFTMs.P50), ms(s.TTFTMs.P99), ms(s.TPOTMs.P50), s.Throughput.RequestsPerSecond,
		s.Throughput.OutputTokensPerSecond, 100*s.ErrorRate)
}

// caseFinished tells whether a workflow case's status is final.
func caseFinished(status string) bool {
	return status == "succeeded" || status == "failed" || status == "cancelled"
}

// follow reads an event stream (eventsPath) until its end event, reconnecting after the last
// event id when the connection closes, showing progress on stderr (a bar redrawn in place on a
// terminal, else a line per update), and returns the end event.
func (a *app) follow(cmd *cobra.Command, eventsPath string) (progressEvent, error) {
	shown := a.newProgress()
	last := ""
	var end *progressEvent
	cases := map[string]bool{} // a workflow's cases seen, and whether each has finished
	for attempt := 0; end == nil; attempt++ {
		header := http.Header{}
		if last != "" {
			header.Set("Last-Event-ID", last)
		}
		resp, err := a.client.do(cmd.Context(), "GET", eventsPath, nil, nil, header)
		if err != nil {
			var apiErr *APIError
			if errors.As(err, &apiErr) || attempt >= 5 || cmd.Context().Err() != nil {
				shown.end(false, "")
				return progressEvent{}, err
			}
			time.Sleep(time.Second << min(attempt, 4))
			continue
		}
		err = sse.Read(resp.Body, func(m sse.Message) error {
			if m.ID != "" {
				last = m.ID
			}
			var ev progressEvent
			_ = json.Unmarshal([]byte(m.Data), &ev)
			switch m.Type {
			case "status":
				percent := ev.ProgressPercent
				if len(cases) > 0 { // a workflow's progress counts its cases instead
					percent = nil
				}
				shown.update(percent, ev.statusText())
			case "case":
				cases[ev.CaseID] = caseFinished(ev.Status)
				done := 0
				for _, finished := range cases {
					if finished {
						done++
					}
				}
				share := float64(done) * 100 / float64(len(cases))
				shown.count(share, fmt.Sprintf("case %s %s (%d of %d cases finished)", ev.CaseID, ev.Status, done, len(cases)))
			case "log":
				shown.log(ev.Line)
			case "end":
				end = &ev
			case "error":
				shown.log("stream: " + ev.Detail)
			}
			return nil
		})
		resp.Body.Close()
		if err != nil && cmd.Context().Err() != nil {
			shown.end(false, "")
			return progressEvent{}, cmd.Context().Err()
		}
	}
	shown.end(end.succeeded(), end.finalMessage())
	return *end, nil
}

// succeeded tells whether an end event's status is a success (a task's completed, a run's or
// workflow's succeeded).
func (ev progressEvent) succeeded() bool {
	return ev.Status == "succeeded" || ev.Status == "completed"
}

// artifactFiles names the file an artifact kind is saved as (<id>-<name>).
var artifactFiles = map[string]string{"report-html": "report.html", "per-request-csv": "per-request.csv",
	"summary-json": "summary.json", "per-request-jsonl": "per-request.jsonl"}

// reportCmd is "report ID [--kind K] [--file F]" for a task or run (what names it), whose
// artifacts are report-html, per-request-csv, per-request-jsonl and the extra kinds.
func (a *app) reportCmd(what string, path func(string) string, extra ...string) *cobra.Command {
	var kind, dest string
	kinds := append([]string{"report-html", "per-request-csv"}, extra...)
	kinds = append(kinds, "per-request-jsonl")
	c := &cobra.Command{Use: "report ID", Short: "Download a " + what + "'s report (or another artifact) to a file", Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.download(cmd, path(argv[0]), argv[0], kind, dest)
		}}
	c.Flags().StringVar(&kind, "kind", "report-html", "artifact kind: "+strings.Join(kinds, ", "))
	c.Flags().StringVar(&dest, "file", "", "where to write it (default <id>-<file name>)")
	return c
}

// download saves the artifact at path to dest (default <id>-<file name>) through a temporary
// file, with a byte progress bar, and prints where it went.
func (a *app) download(cmd *cobra.Command, path, id, kind, dest string) error {
	resp, err := a.client.do(cmd.Context(), "GET", path+"/artifacts/"+url.PathEscape(kind), nil, nil, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if dest == "" {
		name := artifactFiles[kind]
		if name == "" {
			name = kind
		}
		dest = id + "-" + name
	}
	f, err := os.CreateTemp(filepath.Dir(dest), ".lensctl-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	var w io.Writer = f
	if !a.noProgress && terminalWidth(a.errOut) > 0 {
		// progressbar.DefaultBytes, on our stderr, clearing to the end of the line as it redraws.
		bar := progressbar.NewOptions64(resp.ContentLength, progressbar.OptionSetDescription("downloading "+kind),
			progressbar.OptionSetWriter(a.errOut), progressbar.OptionShowBytes(true), progressbar.OptionShowTotalBytes(true),
			progressbar.OptionSetWidth(10), progressbar.OptionThrottle(65*time.Millisecond), progressbar.OptionShowCount(),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(a.errOut) }), progressbar.OptionSpinnerType(14),
			progressbar.OptionFullWidth(), progressbar.OptionUseANSICodes(true))
		w = io.MultiWriter(f, bar)
	}
	_, err = io.Copy(w, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(f.Name(), dest); err != nil {
		return err
	}
	return a.printer.print(map[string]string{"id": id, "kind": kind, "file": dest}, func(t table.Writer) {
		t.AppendHeader(table.Row{"ID", "ARTIFACT", "FILE"})
		t.AppendRow(table.Row{id, kind, dest})
	})
}

// finalMessage is an end event's status with its error, for the exit message.
func (ev progressEvent) finalMessage() string {
	msg := ev.Status
	for _, e := range []*string{ev.ErrorMessage, ev.Error} {
		if e != nil && *e != "" {
			msg += ": " + *e
		}
	}
	return strings.TrimSpace(msg)
}
