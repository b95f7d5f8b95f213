package fidelity

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// WriteTable prints each stage row's predicted against measured figures.
func WriteTable(w io.Writer, rows []Scored) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "experiment\tstage\trps\tTTFT mean\tTTFT p90\tE2E mean\tE2E p90\tE2E p99\tdecode ms\toverload\t")
	for _, r := range rows {
		name := r.Row.Experiment
		if len(name) > 40 {
			name = name[len(name)-40:]
		}
		m, p := r.Row.Measured, r.Predicted
		cell := func(pv, mv float64) string { return fmt.Sprintf("%.1f/%.1f", pv, mv) }
		verdict := "-"
		if r.Row.Overloaded || r.PredOverloaded {
			verdict = fmt.Sprintf("%v/%v", r.PredOverloaded, r.Row.Overloaded)
		}
		fmt.Fprintf(tw, "%s\t%d\t%g\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, r.Row.Stage, r.Row.Rate,
			cell(p.TTFTMean, m.TTFTMean), cell(p.TTFTP90, m.TTFTP90), cell(p.E2EMean, m.E2EMean), cell(p.E2EP90, m.E2EP90),
			cell(p.E2EP99, m.E2EP99), fmt.Sprintf("%.2f/%.2f", p.DecodeInterval, m.DecodeInterval), verdict)
	}
	tw.Flush()
	fmt.Fprintln(w, "(each cell: predicted/measured, milliseconds; overload: predicted/measured)")
}

// WriteMAPE prints the MAPE per metric, with the published peers' figures when the ground
// truth's README beside gtPath has them.
func WriteMAPE(w io.Writer, label string, s Summary, gtPath string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "simulator (rows)\te2e mean\te2e p90\te2e p99\tttft mean\tttft p90\tdecode/ITL\t")
	// MetricNames' order is ttft_mean, ttft_p90, e2e_mean, e2e_p90, e2e_p99, decode.
	fmt.Fprintf(tw, "%s (%d)\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", label, s.Rows, s.MAPE[2], s.MAPE[3], s.MAPE[4], s.MAPE[0], s.MAPE[1], s.MAPE[5])
	for _, peer := range peerRows(gtPath) {
		fmt.Fprintln(tw, strings.Join(peer, "\t")+"\t")
	}
	tw.Flush()
	fmt.Fprintf(w, "overloaded rows flagged: %d/%d; rows wrongly flagged overloaded: %d\n", s.OverloadCorrect, s.OverloadRows, s.FalseOverload)
}

// peerRows reads the published simulators' MAPE table from the ground truth's README (the
// rows after the "| simulator |" header), so the figures stay where they were published.
func peerRows(gtPath string) [][]string {
	f, err := os.Open(filepath.Join(filepath.Dir(gtPath), "README.md"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var rows [][]string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "| simulator |"):
			in = true
		case in && strings.HasPrefix(line, "|---"):
		case in && strings.HasPrefix(line, "|"):
			var cells []string
			for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
				cells = append(cells, strings.TrimSpace(c))
			}
			rows = append(rows, cells)
		case in:
			return rows
		}
	}
	return rows
}

// JSONLine is the harness's last line.
func JSONLine(s Summary) string {
	m := map[string]any{"rows": s.Rows, "overload_correct": fmt.Sprintf("%d/%d", s.OverloadCorrect, s.OverloadRows)}
	for i, name := range MetricNames {
		m[name+"_mape"] = round2(s.MAPE[i])
	}
	b, _ := json.Marshal(orderedLine{m})
	return string(b)
}

type orderedLine struct{ m map[string]any }

// MarshalJSON keeps the documented key order.
func (o orderedLine) MarshalJSON() ([]byte, error) {
	keys := []string{"rows", "ttft_mean_mape", "ttft_p90_mape", "e2e_mean_mape", "e2e_p90_mape", "e2e_p99_mape", "decode_interval_mape", "overload_correct"}
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		v, _ := json.Marshal(o.m[k])
		fmt.Fprintf(&b, "%q: %s", k, v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }
