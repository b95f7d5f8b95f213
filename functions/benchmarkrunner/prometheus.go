package benchmarkrunner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/lensfn/lensfn/runtime/promtargets"
)

const (
	// collectDeadline bounds the range queries of one run's collection (the spec's 120 s).
	collectDeadline = 120 * time.Second
	// snapshotDeadline bounds the completion-time resource snapshot (the spec's 30 s).
	snapshotDeadline = 30 * time.Second
	// maxPoints bounds the points one range query asks for (Prometheus refuses over 11,000).
	maxPoints = 10000
	// maxClockRTT is the longest round trip a clock measurement may take: beyond it the
	// midpoint says too little about when Prometheus read its clock.
	maxClockRTT = 5 * time.Second
)

// promSource reads serving evidence from a Prometheus's HTTP API (LENS_PROMETHEUS_URL). Its
// targets are matched to the run's serving endpoints by the `instance` label, which is the
// endpoint's host:port (how file-based service discovery and the local stack name them).
type promSource struct {
	api   promv1.API
	shown string        // the URL without credentials, for records and logs
	step  time.Duration // the range queries' resolution (the scrape interval)
	// now is the Lens clock (tests move it).
	now func() time.Time
	// targetsDir is a directory the Prometheus discovers targets from (file_sd_configs;
	// LENS_PROMETHEUS_TARGETS_DIR): when Prometheus does not scrape an endpoint yet, the run
	// lists it there for its duration (the local form of setting up monitor resources).
	targetsDir string
	// setup is the discovery file this run wrote ("" when none).
	setup string
}

func newPromSource(rawURL string, step time.Duration, targetsDir string) (*promSource, error) {
	c, err := api.NewClient(api.Config{Address: rawURL, Client: &http.Client{Timeout: 30 * time.Second,
		// The API never redirects; following one could carry the URL's credentials elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}})
	if err != nil {
		return nil, fmt.Errorf("LENS_PROMETHEUS_URL: %w", err)
	}
	return &promSource{api: promv1.NewAPI(c), shown: redactURL(rawURL), step: step, now: time.Now, targetsDir: targetsDir}, nil
}

// redactURL drops a URL's user info (a Prometheus behind basic auth) so it can be shown.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	return u.String()
}

// instanceMatcher selects the endpoints' series: {instance=~"a|b"}.
func instanceMatcher(endpoints []servingEndpoint) string {
	alts := make([]string, len(endpoints))
	for i, e := range endpoints {
		alts[i] = regexp.QuoteMeta(e.instance)
	}
	return `{instance=~` + strconv.Quote(strings.Join(alts, "|")) + `}`
}

// ready waits until Prometheus shows every endpoint up (up == 1) and at least two samples of
// the inference gauge scraped since preparation began, or ctx ends. A healthy target is
// reused; an endpoint Prometheus has no target for is listed in targetsDir (when set) under
// the run's name, until release.
func (p *promSource) ready(ctx context.Context, runID string, endpoints []servingEndpoint) (map[string]any, error) {
	began := p.now()
	sel := instanceMatcher(endpoints)
	var last string
	setup := map[string]any{"status": "reused"}
	for {
		since := max(p.now().Sub(began), time.Second)
		up, err := p.byInstance(ctx, "max by (instance) (up"+sel+")")
		if err == nil && p.setup == "" && p.targetsDir != "" {
			if missing := unknownTo(endpoints, up); len(missing) > 0 {
				name := "run-" + runID
				if werr := promtargets.Write(p.targetsDir, name, missing, map[string]string{"lens_run_id": runID}); werr != nil {
					setup = map[string]any{"status": "failed", "error": werr.Error()}
				} else {
					p.setup = name
					setup = map[string]any{"status": "created", "targets": missing, "discovery_file": name + ".json"}
				}
			}
		}
		var counts map[string]float64
		if err == nil {
			counts, err = p.byInstance(ctx, fmt.Sprintf("max by (instance) (count_over_time(%s%s[%dms]))", seriesRunning, sel, since.Milliseconds()))
		}
		switch {
		case err != nil && ctx.Err() != nil && last != "":
			// the budget ended mid-query: the cause is what the earlier queries saw
		case err != nil:
			last = fmt.Sprintf("Prometheus %s could not be queried: %v", p.shown, err)
		default:
			last = notReady(endpoints, up, counts)
		}
		if err == nil && last == "" {
			targets := make([]map[string]any, len(endpoints))
			for i, e := range endpoints {
				targets[i] = map[string]any{"instance": e.instance, "up": up[e.instance], "samples": counts[e.instance]}
			}
			return map[string]any{"up": 1, "gauge": seriesRunning, "samples": 2, "prometheus_url": p.shown, "targets": targets,
				"monitor_setup": setup, "checked_at": p.now().UTC().Format(time.RFC3339Nano)}, nil
		}
		select {
		case <-ctx.Done():
			return nil, errors.New(last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// unknownTo lists the endpoints Prometheus has no up series for.
func unknownTo(endpoints []servingEndpoint, up map[string]float64) []string {
	var out []string
	for _, e := range endpoints {
		if _, ok := up[e.instance]; !ok {
			out = append(out, e.instance)
		}
	}
	return out
}

// release removes the discovery file the run wrote, if any.
func (p *promSource) release() error {
	if p.setup == "" {
		return nil
	}
	err := promtargets.Remove(p.targetsDir, p.setup)
	p.setup = ""
	return err
}

// notReady says which endpoint is not ready yet ("" when all are).
func notReady(endpoints []servingEndpoint, up, counts map[string]float64) string {
	for _, e := range endpoints {
		u, known := up[e.instance]
		switch {
		case !known:
			return fmt.Sprintf("Prometheus has no scrape target for %s (no up series); add the endpoint to its targets", e.instance)
		case u != 1:
			return fmt.Sprintf("Prometheus's target %s is down (up == %g)", e.instance, u)
		case counts[e.instance] < 2:
			return fmt.Sprintf("Prometheus has %g of the 2 samples of %s from %s needed", counts[e.instance], seriesRunning, e.instance)
		}
	}
	return ""
}

// byInstance runs an instant query whose result is a vector labelled by instance.
func (p *promSource) byInstance(ctx context.Context, query string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, _, _, err := p.api.Query(ctx, query, time.Time{})
	if err != nil {
		return nil, err
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("%q gave a %s, not a vector", query, v.Type())
	}
	out := map[string]float64{}
	for _, s := range vec {
		out[string(s.Metric["instance"])] = float64(s.Value)
	}
	return out, nil
}

// measureOffset is Prometheus's clock minus the Lens clock, in seconds: time() evaluated by
// Prometheus against the midpoint of the request's round trip.
func (p *promSource) measureOffset(ctx context.Context) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, maxClockRTT)
	defer cancel()
	sent := p.now()
	v, _, _, err := p.api.Query(ctx, "time()", time.Time{})
	received := p.now()
	if err != nil {
		return 0, err
	}
	s, ok := v.(*model.Scalar)
	if !ok {
		return 0, fmt.Errorf("time() gave a %s, not a scalar", v.Type())
	}
	return clockOffset(float64(s.Value), sent, received), nil
}

// clockOffset is the offset of a remote clock reading taken during [sent, received] on ours.
func clockOffset(remote float64, sent, received time.Time) float64 {
	mid := sent.Add(received.Sub(sent) / 2)
	return remote - float64(mid.UnixNano())/1e9
}

// alignedWindow is the query window on Prometheus's clock for the Lens window [start, end].
func alignedWindow(start, end time.Time, offsetSeconds float64) (time.Time, time.Time) {
	d := time.Duration(math.Round(offsetSeconds * 1e9))
	return start.Add(d), end.Add(d)
}

// alignment is metrics.observability.clock_alignment: measured with the offset and the
// query window, or unavailable (offset null) with the window the queries used unchanged.
func alignment(measured bool, offsetSeconds float64, qs, qe time.Time) map[string]any {
	window := map[string]any{"start": qs.UTC().Format(time.RFC3339Nano), "end": qe.UTC().Format(time.RFC3339Nano)}
	if !measured {
		return unavailableAlignment(window)
	}
	return map[string]any{"status": "measured", "offset_seconds": math.Round(offsetSeconds*1e6) / 1e6, "query_window": window}
}

// unavailableAlignment is the alignment of a collection whose clock was not measured; window
// is the query window used (nil when no range query ran).
func unavailableAlignment(window map[string]any) map[string]any {
	var w any
	if window != nil {
		w = window
	}
	return map[string]any{"status": "unavailable", "offset_seconds": nil, "query_window": w}
}

// collect reads the scraped series of the endpoints over the Lens window [from, to] (seconds
// after start): it measures the clock offset, waits (within ctx) until Prometheus has scraped
// past the window's end (when wait), runs one range query per series on the aligned window, and maps the
// points back onto the Lens timeline, closing the window with the latest scrapes. Query failures are returned; their series stay
// unavailable.
func (p *promSource) collect(ctx context.Context, endpoints []servingEndpoint, start time.Time, from, to float64, wait bool) ([][]sample, map[string]any, []string) {
	lensStart := start.Add(time.Duration(from * float64(time.Second)))
	lensEnd := start.Add(time.Duration(to * float64(time.Second)))
	offset, err := p.measureOffset(ctx)
	measured := err == nil
	if !measured {
		offset = 0
	}
	var errs []string
	if err != nil {
		errs = append(errs, "clock alignment: "+err.Error())
	}
	qs, qe := alignedWindow(lensStart, lensEnd, offset)
	if wait {
		p.awaitScrapesPast(ctx, endpoints, qe)
	}
	step := p.step
	if span := qe.Sub(qs); span/step > maxPoints {
		step = span / maxPoints
	}
	step = max(step, time.Millisecond)
	index := map[string]int{}
	for i, e := range endpoints {
		index[e.instance] = i
	}
	// points[endpoint][millisecond on Prometheus's clock] = series values
	points := make([]map[int64]map[string]float64, len(endpoints))
	for i := range points {
		points[i] = map[int64]map[string]float64{}
	}
	sel := instanceMatcher(endpoints)
	for _, name := range scraped {
		v, _, _, err := p.api.QueryRange(ctx, "sum by (instance) ("+name+sel+")", promv1.Range{Start: qs, End: qe, Step: step})
		if err != nil {
			errs = append(errs, name+": "+err.Error())
			continue
		}
		matrix, ok := v.(model.Matrix)
		if !ok {
			errs = append(errs, fmt.Sprintf("%s: a %s, not a matrix", name, v.Type()))
			continue
		}
		for _, stream := range matrix {
			i, ok := index[string(stream.Metric["instance"])]
			if !ok {
				continue
			}
			for _, pt := range stream.Values {
				ms := int64(pt.Timestamp)
				if points[i][ms] == nil {
					points[i][ms] = map[string]float64{}
				}
				points[i][ms][name] = float64(pt.Value)
			}
		}
	}
	final, err := p.latest(ctx, endpoints)
	if err != nil {
		errs = append(errs, "the final sample: "+err.Error())
	}
	out := make([][]sample, len(endpoints))
	for i, byTime := range points {
		stamps := make([]int64, 0, len(byTime))
		for ms := range byTime {
			stamps = append(stamps, ms)
		}
		sort.Slice(stamps, func(a, b int) bool { return stamps[a] < stamps[b] })
		for _, ms := range stamps {
			// The points are the window's by construction: millisecond timestamps must not
			// push the first or last just outside it.
			at := min(max(lensSeconds(ms, start, offset), from), to)
			out[i] = append(out[i], sample{at: at, values: byTime[ms]})
		}
		// The range's last point holds the last scrape before the window's end, which can
		// predate the last requests; the first scrape after it closes the window, as the scrape
		// path's final scrape does.
		if len(final[i]) > 0 {
			out[i] = append(out[i], sample{at: to, values: final[i]})
		}
	}
	return out, alignment(measured, offset, qs, qe), errs
}

// latest is each endpoint's latest value of every scraped series (summed over label sets), in
// one instant query.
func (p *promSource) latest(ctx context.Context, endpoints []servingEndpoint) ([]map[string]float64, error) {
	out := make([]map[string]float64, len(endpoints))
	index := map[string]int{}
	for i, e := range endpoints {
		index[e.instance] = i
		out[i] = map[string]float64{}
	}
	v, _, _, err := p.api.Query(ctx, seriesSelector(scraped, endpoints), time.Time{})
	if err != nil {
		return out, err
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return out, fmt.Errorf("a %s, not a vector", v.Type())
	}
	for _, s := range vec {
		if i, ok := index[string(s.Metric["instance"])]; ok {
			out[i][string(s.Metric[model.MetricNameLabel])] += float64(s.Value)
		}
	}
	return out, nil
}

// seriesSelector selects the named series of the endpoints: {__name__=~"a|b",instance=~"..."}.
func seriesSelector(names []string, endpoints []servingEndpoint) string {
	return `{__name__=~` + strconv.Quote(strings.Join(quoteAll(names), "|")) + `,` + strings.TrimPrefix(instanceMatcher(endpoints), "{")
}

// lensSeconds puts a Prometheus timestamp (ms on its clock) on the Lens timeline: seconds after
// start on our clock.
func lensSeconds(promMillis int64, start time.Time, offsetSeconds float64) float64 {
	return float64(promMillis)/1e3 - offsetSeconds - float64(start.UnixNano())/1e9
}

// awaitScrapesPast waits until Prometheus holds a sample of the inference gauge at or after
// until (its clock) from every endpoint, so the counters cover the window's end; it gives up
// after three scrape intervals (at least 5 s) or when ctx ends.
func (p *promSource) awaitScrapesPast(ctx context.Context, endpoints []servingEndpoint, until time.Time) {
	deadline := time.Now().Add(max(3*p.step, 5*time.Second))
	query := "max by (instance) (timestamp(" + seriesRunning + instanceMatcher(endpoints) + "))"
	for time.Now().Before(deadline) && ctx.Err() == nil {
		latest, err := p.byInstance(ctx, query)
		if err == nil && allPast(endpoints, latest, until) {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func allPast(endpoints []servingEndpoint, latest map[string]float64, until time.Time) bool {
	for _, e := range endpoints {
		if latest[e.instance]*1e3 < float64(until.UnixMilli()) {
			return false
		}
	}
	return true
}

// snapshot reads each endpoint's resources at completion from Prometheus's latest samples.
func (p *promSource) snapshot(ctx context.Context, endpoints []servingEndpoint) []map[string]any {
	rows := make([]map[string]any, len(endpoints))
	index := map[string]int{}
	for i, e := range endpoints {
		index[e.instance] = i
		rows[i] = map[string]any{"endpoint": e.base, "instance": e.instance, "status": "unavailable",
			"reason": "Prometheus holds no sample of this endpoint"}
	}
	names := append([]string{seriesCacheConfig}, snapshotGauges...)
	v, _, _, err := p.api.Query(ctx, seriesSelector(names, endpoints), time.Time{})
	if err != nil {
		for _, r := range rows {
			r["reason"] = fmt.Sprintf("Prometheus %s could not be queried: %v", p.shown, err)
		}
		return rows
	}
	vec, _ := v.(model.Vector)
	for _, s := range vec {
		i, ok := index[string(s.Metric["instance"])]
		if !ok {
			continue
		}
		row := rows[i]
		if row["status"] != "captured" {
			row["status"], row["gauges"] = "captured", map[string]float64{}
			delete(row, "reason")
		}
		name := string(s.Metric[model.MetricNameLabel])
		if name == seriesCacheConfig {
			labels := map[string]string{}
			for k, val := range s.Metric {
				switch k {
				case model.MetricNameLabel, "instance", "job":
				default:
					labels[string(k)] = string(val)
				}
			}
			row["cache_config"] = labels
			continue
		}
		row["gauges"].(map[string]float64)[name] += float64(s.Value)
	}
	return rows
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = regexp.QuoteMeta(n)
	}
	return out
}
