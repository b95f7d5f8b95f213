package lensctl

import (
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
)

const simAPI = "/api/simulation"

func (a *app) datasetsCmd() *cobra.Command {
	list := &cobra.Command{Use: "list", Short: "List the trace datasets", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var out struct {
				DataDir  string           `json:"data_dir"`
				Datasets []map[string]any `json:"datasets"`
			}
			if err := a.client.JSON(cmd.Context(), "GET", simAPI+"/trace-datasets", nil, nil, &out); err != nil {
				return err
			}
			return a.printer.print(out, func(t table.Writer) {
				t.AppendHeader(table.Row{"NAME", "SCENARIO", "FORMAT", "DOWNLOADED"})
				for _, d := range out.Datasets {
					t.AppendRow(table.Row{d["name"], d["scenario"], d["trace_format"], d["downloaded"]})
				}
			})
		}}
	var force bool
	download := &cobra.Command{Use: "download NAME", Short: "Download a dataset into the data dir and verify it", Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			bar := a.spinner("downloading " + argv[0])
			var out map[string]any
			err := a.client.JSON(cmd.Context(), "POST", simAPI+"/trace-datasets/download", nil,
				map[string]any{"dataset": argv[0], "force": force}, &out)
			bar.finish()
			if err != nil {
				return err
			}
			return a.printer.print(out, func(t table.Writer) {
				t.AppendHeader(table.Row{"FIELD", "VALUE"})
				for _, k := range sortedKeys(out) {
					t.AppendRow(table.Row{k, human(out[k])})
				}
			})
		}}
	download.Flags().BoolVar(&force, "force", false, "transfer again even when present and verified")
	var bins int
	timeline := &cobra.Command{Use: "timeline NAME", Short: "Arrivals per bin of a dataset", Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			var out struct {
				RequestCount    int64   `json:"request_count"`
				DurationSeconds float64 `json:"duration_seconds"`
				BinWidthSeconds float64 `json:"bin_width_seconds"`
				Bins            []struct {
					RequestCount int64 `json:"request_count"`
				} `json:"bins"`
			}
			var raw map[string]any
			q := url.Values{"bins": {strconv.Itoa(bins)}}
			if err := a.client.JSON(cmd.Context(), "GET", simAPI+"/trace-datasets/"+url.PathEscape(argv[0])+"/timeline", q, nil, &raw); err != nil {
				return err
			}
			remarshal(raw, &out)
			return a.printer.print(raw, func(t table.Writer) {
				counts := make([]int64, len(out.Bins))
				for i, b := range out.Bins {
					counts[i] = b.RequestCount
				}
				t.AppendHeader(table.Row{"REQUESTS", "DURATION (s)", "BIN (s)", "SHAPE"})
				t.AppendRow(table.Row{human(out.RequestCount), human(out.DurationSeconds), human(out.BinWidthSeconds), sparkline(counts, 60)})
			})
		}}
	timeline.Flags().IntVar(&bins, "bins", 60, "number of bins (50-2000)")
	return group("datasets", "Trace datasets", list, download, timeline)
}

// sparkline draws counts as block characters, at most width wide.
func sparkline(counts []int64, width int) string {
	if len(counts) == 0 {
		return ""
	}
	step := max(1, (len(counts)+width-1)/width)
	var sums []int64
	var top int64
	for i := 0; i < len(counts); i += step {
		var s int64
		for _, c := range counts[i:min(i+step, len(counts))] {
			s += c
		}
		sums, top = append(sums, s), max(top, s)
	}
	blocks := []rune(" ▁▂▃▄▅▆▇█")
	var b strings.Builder
	for _, s := range sums {
		i := 0
		if top > 0 {
			i = int(s * int64(len(blocks)-1) / top)
		}
		if s > 0 && i == 0 {
			i = 1 // a bin with arrivals is never drawn empty
		}
		b.WriteRune(blocks[i])
	}
	return b.String()
}

// spin is a progress bar of unknown length (a spinner) on stderr, for a call the server answers
// only when it is done (a dataset transfer).
type spin struct {
	bar  *progressbar.ProgressBar
	stop chan struct{}
	done chan struct{}
}

func (a *app) spinner(what string) spin {
	if a.noProgress || terminalWidth(a.errOut) == 0 {
		return spin{}
	}
	s := spin{bar: progressbar.NewOptions(-1, progressbar.OptionSetWriter(a.errOut), progressbar.OptionSetDescription(what),
		progressbar.OptionSpinnerType(14), progressbar.OptionClearOnFinish(), progressbar.OptionUseANSICodes(true)),
		stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
				_ = s.bar.Add(1)
			}
		}
	}()
	return s
}

func (s spin) finish() {
	if s.bar != nil {
		close(s.stop)
		<-s.done
		_ = s.bar.Finish()
	}
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

// remarshal copies a decoded JSON value into a typed one (fields it lacks stay zero).
func remarshal(from, to any) {
	if raw, err := json.Marshal(from); err == nil {
		_ = json.Unmarshal(raw, to)
	}
}
