package runreport

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/lensfn/lensfn/runtime/analysis"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/runtime/report"
	"github.com/lensfn/lensfn/runtime/report/recordcsv"
)

// Artifact kinds.
const (
	KindHTML = "report-html"
	KindCSV  = "per-request-csv"
)

// bins is how many bars a distribution's histogram has; timelineBins how many points a
// timeline has at most.
const (
	bins         = 40
	timelineBins = 120
	// clockBuckets is how many buckets the run-wide clock keeps, clockStart the first
	// bucket width: the width doubles (neighbours merged) whenever a completion falls past the
	// last bucket, so a half-second run and a day-long one both get about timelineBins points
	// with memory that never grows.
	clockBuckets = 4 * timelineBins
	clockStart   = 0.01 // seconds
)

// extraColumns are the run-specific CSV columns, from each record's metadata.
var extraColumns = []string{"phase", "stage", "worker"}

// WriteCSV writes the per-request records at recordsPath as CSV. A missing file is
// os.ErrNotExist before anything is written.
func WriteCSV(w io.Writer, recordsPath string) error {
	f, err := os.Open(recordsPath)
	if err != nil {
		return err
	}
	defer f.Close()
	cw, err := recordcsv.NewWriter(w, extraColumns...)
	if err != nil {
		return err
	}
	err = analysis.ReadRecords(bufio.NewReaderSize(f, 1<<16), func(rec loadgen.Record) error {
		return cw.Write(rec, meta(rec, "phase"), meta(rec, "stage"), meta(rec, "worker"))
	})
	if ferr := cw.Flush(); err == nil {
		err = ferr
	}
	return err
}

// meta is a metadata value as text ("" when absent).
func meta(rec loadgen.Record, key string) string {
	switch v := rec.Metadata[key].(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	default:
		return fmt.Sprint(v)
	}
}

// WriteHTML renders the run's report. Records are read from recordsPath when it exists (a run
// that never sent a request has none; the report then shows the record alone).
func WriteHTML(w io.Writer, run *evalrun.Run, recordsPath string, now time.Time) error {
	var m evalrun.Metrics
	evalrun.Decode(run.Metrics, &m)
	d := newDistributions(m)
	var readErr error
	if f, err := os.Open(recordsPath); err == nil {
		readErr = analysis.ReadRecords(bufio.NewReaderSize(f, 1<<16), func(rec loadgen.Record) error {
			d.add(rec)
			return nil
		})
		f.Close()
	} else if !errors.Is(err, os.ErrNotExist) {
		readErr = err
	}
	page := build(run, m, d, now)
	if readErr != nil {
		page.Sections[0].Warnings = append(page.Sections[0].Warnings,
			"The per-request records could not all be read ("+readErr.Error()+"); the charts show the records before the problem.")
	}
	return report.Render(w, page)
}

// distributions bins the per-request metrics over the ranges the run's metrics report, and
// counts completions, failures and tokens per second of a run-wide clock, so memory stays
// bounded however many records a run has.
type distributions struct {
	latency, ttft, tpot, delay *report.Histogram
	codes                      map[string]int64
	records                    int64
	// Each phase (and each concurrency stage) counts from its own schedule start: offset
	// carries the segments before the current one onto one clock. A segment restarts the clock
	// when its first request is scheduled no later than the previous segment's first one.
	segment                     string
	offset, segmentEnd, firstAt float64
	clock                       timeClock
}

func newDistributions(m evalrun.Metrics) *distributions {
	dists, _ := m["latency_distributions"].(map[string]any)
	h := func(name string) *report.Histogram {
		d, _ := dists[name].(map[string]any)
		lo, _ := d["min_ms"].(float64)
		hi, _ := d["max_ms"].(float64)
		return report.NewHistogram(lo, hi, bins)
	}
	delay, _ := m["schedule_delay"].(map[string]any)
	top, _ := delay["p99_ms"].(float64)
	return &distributions{latency: h("request_latency"), ttft: h("ttft"), tpot: h("tpot"),
		delay: report.NewHistogram(0, max(1, top*1.5), bins), codes: map[string]int64{}}
}

func (d *distributions) add(r loadgen.Record) {
	d.records++
	if seg := meta(r, "phase") + "/" + meta(r, "stage"); seg != d.segment {
		if d.records > 1 && r.ScheduledAtSeconds <= d.firstAt {
			d.offset, d.segmentEnd = d.offset+d.segmentEnd, 0
		}
		d.segment, d.firstAt = seg, r.ScheduledAtSeconds
	}
	d.segmentEnd = max(d.segmentEnd, r.CompletedAtSeconds)
	b := d.clock.bucket(max(d.offset+r.CompletedAtSeconds, 0))
	b.done++
	d.delay.Add(max(0, (r.StartedAtSeconds-r.ScheduledAtSeconds)*1000))
	code := "no response"
	if r.StatusCode != nil {
		code = strconv.Itoa(*r.StatusCode)
	}
	d.codes[code]++
	if !r.Successful {
		b.failed++
		return
	}
	b.tokens += r.OutputTokens
	d.latency.Add(r.LatencyMs)
	if r.TTFTMs != nil {
		d.ttft.Add(*r.TTFTMs)
	}
	if r.TPOTMs != nil {
		d.tpot.Add(*r.TPOTMs)
	}
}

// clockBucket counts what completed in one slice of the run-wide clock.
type clockBucket struct {
	done, failed int64
	tokens       float64
}

// timeClock is a fixed number of equal buckets over [0, width*len), widened by doubling.
type timeClock struct {
	width   float64
	buckets []clockBucket
	used    int // buckets up to the latest completion
}

func (c *timeClock) bucket(t float64) *clockBucket {
	if c.buckets == nil {
		c.width, c.buckets = clockStart, make([]clockBucket, clockBuckets)
	}
	if math.IsNaN(t) || math.IsInf(t, 0) {
		t = 0
	}
	for t >= c.width*float64(len(c.buckets)) {
		for i := range len(c.buckets) / 2 {
			a, b := c.buckets[2*i], c.buckets[2*i+1]
			c.buckets[i] = clockBucket{done: a.done + b.done, failed: a.failed + b.failed, tokens: a.tokens + b.tokens}
		}
		clear(c.buckets[len(c.buckets)/2:])
		c.width *= 2
		c.used = (c.used + 1) / 2
	}
	i := int(t / c.width)
	c.used = max(c.used, i+1)
	return &c.buckets[i]
}

// timelines are the completion, throughput and error charts over the run-wide clock, its
// buckets merged into at most timelineBins points.
func (d *distributions) timelines() []report.Chart {
	buckets := d.clock.buckets[:d.clock.used]
	width := max(1, int(math.Ceil(float64(len(buckets))/timelineBins)))
	completed, failed := report.Series{Name: "completed (cumulative)"}, report.Series{Name: "failed (cumulative)"}
	rps, tps, errRate := report.Series{Name: "completions/s"}, report.Series{Name: "output tokens/s"}, report.Series{Name: "error rate %"}
	var cumDone, cumFailed int64
	for start := 0; start < len(buckets); start += width {
		end := min(start+width, len(buckets))
		var n, f int64
		var tok float64
		for _, b := range buckets[start:end] {
			n, f, tok = n+b.done, f+b.failed, tok+b.tokens
		}
		cumDone, cumFailed = cumDone+n, cumFailed+f
		from, to := float64(start)*d.clock.width, float64(end)*d.clock.width
		span := to - from
		completed.X, completed.Y = append(completed.X, to), append(completed.Y, float64(cumDone))
		failed.X, failed.Y = append(failed.X, to), append(failed.Y, float64(cumFailed))
		rps.X, rps.Y = append(rps.X, from), append(rps.Y, float64(n)/span)
		tps.X, tps.Y = append(tps.X, from), append(tps.Y, tok/span)
		rate := 0.0
		if n > 0 {
			rate = 100 * float64(f) / float64(n)
		}
		errRate.X, errRate.Y = append(errRate.X, from), append(errRate.Y, rate)
	}
	axis := "seconds of traffic (phases back to back)"
	return []report.Chart{
		report.LineChart{Title: "Completion timeline", XLabel: axis, YLabel: "requests", Step: true, Series: []report.Series{completed, failed}},
		report.LineChart{Title: "Request throughput", XLabel: axis, YLabel: "requests/s", Series: []report.Series{rps}},
		report.LineChart{Title: "Token throughput", XLabel: axis, YLabel: "tokens/s", Series: []report.Series{tps}},
		report.LineChart{Title: "Error rate", XLabel: axis, YLabel: "% of completions", Series: []report.Series{errRate}},
	}
}

func (d *distributions) statusCodes() report.Section {
	codes := make([]string, 0, len(d.codes))
	for c := range d.codes {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	sec := report.Section{Heading: "Status codes", Table: &report.Table{Header: []string{"status", "requests", "%"}}}
	bar := report.BarChart{Title: "Responses by status code", XLabel: "status", YLabel: "requests"}
	for _, c := range codes {
		color := "#D55E00"
		if n, err := strconv.Atoi(c); err == nil && n < 400 {
			color = "#009E73"
		}
		n := d.codes[c]
		bar.Labels, bar.Values, bar.Colors = append(bar.Labels, c), append(bar.Values, float64(n)), append(bar.Colors, color)
		sec.Table.Rows = append(sec.Table.Rows, []string{c, strconv.FormatInt(n, 10), report.Num(100 * float64(n) / float64(max(d.records, 1)))})
	}
	sec.Charts = []report.Chart{bar}
	return sec
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
