package simreport

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/lensfn/lensfn/runtime/analysis"
	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/runtime/report"
	"github.com/lensfn/lensfn/runtime/report/recordcsv"
	"github.com/lensfn/lensfn/runtime/simtask"
)

// Artifact kinds of the report.
const (
	KindHTML = "report-html"
	KindCSV  = "per-request-csv"
)

// The files, named where the API derives every artifact's path.
var (
	HTMLFile = simtask.ArtifactFiles[KindHTML]
	CSVFile  = simtask.ArtifactFiles[KindCSV]
)

// bins is how many bars a distribution's histogram has.
const bins = 40

// Write reads the task's records once, writing per-request.csv and report.html into its folder
// (each through a temporary file, so a reader never sees half of one), and returns the two
// artifacts. The task must carry its result summary.
func Write(t *simtask.Task, now time.Time) ([]simtask.Artifact, error) {
	if t.Result == nil || len(t.Result.Summary) == 0 {
		return nil, fmt.Errorf("simreport: task %s has no result summary yet", t.ID)
	}
	var s analysis.Summary
	if err := json.Unmarshal(t.Result.Summary, &s); err != nil {
		return nil, fmt.Errorf("simreport: task %s summary: %w", t.ID, err)
	}
	csvPath, htmlPath := filepath.Join(t.TaskDir, CSVFile), filepath.Join(t.TaskDir, HTMLFile)
	d := newDistributions(s)
	var readErr error
	err := writeAtomically(csvPath, func(w io.Writer) error {
		cw, err := recordcsv.NewWriter(w)
		if err != nil {
			return err
		}
		readErr = eachRecord(t.Internal.RecordsPath, func(rec loadgen.Record) error {
			d.add(rec)
			return cw.Write(rec)
		})
		return cw.Flush()
	})
	if err != nil {
		return nil, err
	}
	page := build(t, s, d, now)
	if readErr != nil {
		page.Sections[0].Warnings = append(page.Sections[0].Warnings,
			"The per-request records could not all be read ("+readErr.Error()+"); the distributions and the CSV show the records before the problem.")
	}
	if err := writeAtomically(htmlPath, func(w io.Writer) error { return report.Render(w, page) }); err != nil {
		return nil, err
	}
	uri := "artifact://simulation/" + t.ID + "/"
	return []simtask.Artifact{
		{URI: uri + HTMLFile, Kind: KindHTML, Path: htmlPath, MediaType: "text/html; charset=utf-8"},
		{URI: uri + CSVFile, Kind: KindCSV, Path: csvPath, MediaType: "text/csv; charset=utf-8"},
	}, nil
}

func eachRecord(path string, fn func(loadgen.Record) error) error {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return analysis.ReadRecordsWithoutMetadata(bufio.NewReaderSize(f, 1<<16), fn)
}

func writeAtomically(path string, write func(io.Writer) error) error {
	// A temporary file of its own: two on-demand writers never share one.
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if err := f.Chmod(0o600); err != nil { // private, as everything under the data dir (README "Security")
		f.Close()
		_ = os.Remove(tmp)
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// distributions bins each per-request metric over the range the summary reports, so memory
// stays fixed however many records a task has.
type distributions struct {
	latency, ttft, tpot, drift *report.Histogram
}

func newDistributions(s analysis.Summary) *distributions {
	h := func(d *analysis.Distribution) *report.Histogram {
		if d == nil {
			return report.NewHistogram(0, 1, bins)
		}
		return report.NewHistogram(d.MinMs, d.MaxMs, bins)
	}
	driftTop := 1.0
	if s.Drift != nil {
		driftTop = max(1, s.Drift.P99Ms*1.5)
	}
	return &distributions{latency: h(s.Latency), ttft: h(s.TTFT), tpot: h(s.TPOT),
		drift: report.NewHistogram(0, driftTop, bins)}
}

// add counts a record as the summary does: latency, TTFT and TPOT of successful requests,
// drift of every request.
func (d *distributions) add(r loadgen.Record) {
	d.drift.Add(max(0, (r.StartedAtSeconds-r.ScheduledAtSeconds)*1000))
	if !r.Successful {
		return
	}
	d.latency.Add(r.LatencyMs)
	if r.TTFTMs != nil {
		d.ttft.Add(*r.TTFTMs)
	}
	if r.TPOTMs != nil {
		d.tpot.Add(*r.TPOTMs)
	}
}
