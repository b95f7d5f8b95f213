package benchmarkrunner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/lensfn/lensfn/runtime/egress"
	"github.com/lensfn/lensfn/runtime/promtargets"
)

// Series the runner reads from a vLLM-compatible /metrics (gauges and counters), by either
// path: its own scrapes or a Prometheus's range queries.
const (
	seriesRunning       = "vllm:num_requests_running"
	seriesWaiting       = "vllm:num_requests_waiting"
	seriesKVUsage       = "vllm:kv_cache_usage_perc"
	seriesPrefixHits    = "vllm:prefix_cache_hits_total"
	seriesPrefixQueries = "vllm:prefix_cache_queries_total"
	seriesGenTokens     = "vllm:generation_tokens_total"
	seriesPromptTokens  = "vllm:prompt_tokens_total"
	seriesRequests      = "vllm:request_success_total"
	seriesCacheConfig   = "vllm:cache_config_info"
	// The engine's own (vLLM; the simulator's engine model): preemptions, and the tokens per
	// step histogram's sum and count.
	seriesPreemptions     = "vllm:num_preemptions_total"
	seriesIterTokensSum   = "vllm:iteration_tokens_total_sum"
	seriesIterTokensCount = "vllm:iteration_tokens_total_count"
	maxScrapeBytes        = 8 << 20
	// maxEndpoints bounds the serving endpoints one run monitors (a deployment's replicas).
	maxEndpoints = 64
)

var scraped = []string{seriesRunning, seriesWaiting, seriesKVUsage, seriesPrefixHits, seriesPrefixQueries, seriesGenTokens, seriesPromptTokens, seriesRequests,
	seriesPreemptions, seriesIterTokensSum, seriesIterTokensCount}

// sample is one reading of one endpoint: each series' value summed over its label sets; absent
// series are absent.
type sample struct {
	at     float64 // seconds since the monitor started (the run's own, Lens, timeline)
	values map[string]float64
}

// servingEndpoint is one endpoint the run's traffic reaches.
type servingEndpoint struct {
	base     string // http://host:port
	metrics  string // its /metrics
	instance string // host:port, the `instance` label Prometheus gives its target
}

func newServingEndpoint(raw string) (servingEndpoint, error) {
	base := strings.TrimSuffix(strings.TrimRight(raw, "/"), "/v1")
	instance, err := promtargets.Instance(base)
	if err != nil {
		return servingEndpoint{}, fmt.Errorf("%q is not an http(s) endpoint", raw)
	}
	return servingEndpoint{base: base, metrics: metricsURL(base), instance: instance}, nil
}

// monitor collects serving evidence for one run from every serving endpoint: without a
// Prometheus it scrapes their /metrics itself during the run; with one (prom) it reads the same
// series through Prometheus's HTTP API after the run. Missing series stay unavailable, never 0.
type monitor struct {
	endpoints []servingEndpoint
	client    *http.Client
	start     time.Time
	prom      *promSource // nil: the scrape path

	mu      sync.Mutex
	samples [][]sample // per endpoint, in time order
	errs    int
	lastErr string
	// alignment is the clock alignment of the Prometheus collection (nil on the scrape path).
	alignment map[string]any
	queryErrs []string
}

func newMonitor(endpoints []servingEndpoint, client *http.Client, start time.Time, prom *promSource) *monitor {
	return &monitor{endpoints: endpoints, client: client, start: start, prom: prom, samples: make([][]sample, len(endpoints))}
}

// source names where the evidence comes from.
func (m *monitor) source() string {
	if m.prom != nil {
		return "prometheus"
	}
	return "scrape"
}

// describe says, for monitoring.message, how the run is monitored.
func (m *monitor) describe() string {
	names := make([]string, len(m.endpoints))
	for i, e := range m.endpoints {
		names[i] = e.instance
	}
	who := "The endpoint is"
	if len(names) > 1 {
		who = fmt.Sprintf("All %d serving endpoints are", len(names))
	}
	if m.prom != nil {
		return fmt.Sprintf("%s up in Prometheus %s and %s was sampled twice (%s); the runner queries the benchmark window there after the run.",
			who, m.prom.shown, seriesRunning, strings.Join(names, ", "))
	}
	urls := make([]string, len(m.endpoints))
	for i, e := range m.endpoints {
		urls[i] = e.metrics
	}
	return fmt.Sprintf("%s up and %s was sampled twice; the runner scrapes %s during the benchmark.", who, seriesRunning, strings.Join(urls, ", "))
}

// metricsURL is the /metrics of an OpenAI base URL (http://host:8000/v1 -> http://host:8000/metrics).
func metricsURL(endpoint string) string {
	base := strings.TrimRight(endpoint, "/")
	base = strings.TrimSuffix(base, "/v1")
	return base + "/metrics"
}

// readMetrics reads and parses one /metrics.
func (m *monitor) readMetrics(ctx context.Context, metrics string) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metrics, nil)
	if err != nil {
		return nil, err
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s could not be read: %w", metrics, egress.Reason(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered HTTP %d", metrics, resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(io.LimitReader(resp.Body, maxScrapeBytes))
	if err != nil {
		return nil, fmt.Errorf("%s is not Prometheus text: %v", metrics, err)
	}
	return families, nil
}

// scrape reads one endpoint's /metrics once: the scraped series, each summed over its label sets.
func (m *monitor) scrape(ctx context.Context, e servingEndpoint) (map[string]float64, error) {
	families, err := m.readMetrics(ctx, e.metrics)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, name := range scraped {
		if f, ok := families[name]; ok {
			total := 0.0
			for _, metric := range f.GetMetric() {
				total += valueOf(f.GetType(), metric)
			}
			out[name] = total
			continue
		}
		// A histogram's _sum and _count, as Prometheus stores them as series of their own.
		for _, part := range []string{"_sum", "_count"} {
			base, ok := strings.CutSuffix(name, part)
			if f := families[base]; ok && f != nil && f.GetType() == dto.MetricType_HISTOGRAM {
				total := 0.0
				for _, metric := range f.GetMetric() {
					if part == "_sum" {
						total += metric.GetHistogram().GetSampleSum()
					} else {
						total += float64(metric.GetHistogram().GetSampleCount())
					}
				}
				out[name] = total
			}
		}
	}
	return out, nil
}

func valueOf(t dto.MetricType, m *dto.Metric) float64 {
	switch t {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	case dto.MetricType_UNTYPED:
		return m.GetUntyped().GetValue()
	}
	return 0
}

// ready waits until every serving endpoint is up and shows two samples of the inference gauge,
// or ctx ends; it returns the preflight evidence or why monitoring is not ready.
func (m *monitor) ready(ctx context.Context, runID string) (map[string]any, error) {
	if m.prom != nil {
		return m.prom.ready(ctx, runID, m.endpoints)
	}
	seen := make([]int, len(m.endpoints))
	why := make([]string, len(m.endpoints)) // what keeps each endpoint from being ready
	for {
		for i, e := range m.endpoints {
			if seen[i] >= 2 {
				continue
			}
			values, err := m.scrape(ctx, e)
			if ctx.Err() != nil && why[i] != "" {
				break // the budget ended mid-scrape: the cause is what the earlier scrapes saw
			}
			switch {
			case err != nil:
				why[i] = err.Error()
			case !has(values, seriesRunning):
				why[i] = e.metrics + " has no " + seriesRunning + " gauge"
			default:
				seen[i]++
				why[i] = "only one sample of " + seriesRunning + " arrived from " + e.metrics
			}
		}
		if allAtLeast(seen, 2) {
			targets := make([]map[string]any, len(m.endpoints))
			for i, e := range m.endpoints {
				targets[i] = map[string]any{"instance": e.instance, "metrics_url": e.metrics, "up": 1, "samples": seen[i]}
			}
			return map[string]any{"up": 1, "gauge": seriesRunning, "samples": 2, "metrics_url": m.endpoints[0].metrics,
				"targets": targets, "checked_at": time.Now().UTC().Format(time.RFC3339Nano)}, nil
		}
		select {
		case <-ctx.Done():
			for i := range m.endpoints {
				if seen[i] < 2 {
					return nil, errors.New(why[i])
				}
			}
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func allAtLeast(counts []int, n int) bool {
	for _, c := range counts {
		if c < n {
			return false
		}
	}
	return true
}

func has(values map[string]float64, name string) bool {
	_, ok := values[name]
	return ok
}

// run samples every endpoint every interval until ctx ends (the scrape path; Prometheus does
// its own scraping).
func (m *monitor) run(ctx context.Context, interval time.Duration) {
	if m.prom != nil {
		return
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		m.scrapeAll(ctx, time.Since(m.start).Seconds())
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// scrapeAll samples every endpoint once, concurrently, stamping the samples at.
func (m *monitor) scrapeAll(ctx context.Context, at float64) {
	var wg sync.WaitGroup
	for i, e := range m.endpoints {
		wg.Go(func() {
			values, err := m.scrape(ctx, e)
			m.mu.Lock()
			defer m.mu.Unlock()
			if err != nil {
				if ctx.Err() == nil {
					m.errs++
					m.lastErr = err.Error()
				}
				return
			}
			m.samples[i] = append(m.samples[i], sample{at: at, values: values})
		})
	}
	wg.Wait()
}

// finish completes collection once the traffic of [from, to] (the monitor's clock) is over,
// even when ctx has ended (a cancelled run keeps its evidence): the scrape path takes one last
// sample, so the counters cover the whole window; the Prometheus path runs its range queries
// over the window (120 s deadline), first waiting for Prometheus to scrape past the window's
// end unless ctx has ended (a cancel is honoured within a second).
func (m *monitor) finish(ctx context.Context, from, to float64) {
	wait := ctx.Err() == nil
	ctx = context.WithoutCancel(ctx)
	if m.prom == nil {
		m.scrapeAll(ctx, to)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, collectDeadline)
	defer cancel()
	samples, alignment, errs := m.prom.collect(ctx, m.endpoints, m.start, from, to, wait)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.samples, m.alignment, m.queryErrs = samples, alignment, errs
}

// flowReason is the spec's wording when no traffic samples were recorded.
const flowReason = "No inference request or token samples were recorded during the benchmark window. Resource samples do not establish serving traffic monitoring."

// evidence summarises the samples whose time falls in [from, to] (seconds on the monitor's
// clock), across the serving endpoints and per endpoint (derive.go).
func (m *monitor) evidence(from, to float64) map[string]any {
	m.mu.Lock()
	defer m.mu.Unlock()
	ev := summarize(m.endpoints, m.samples, from, to)
	obs := ev.observability()
	obs["source"] = m.source()
	obs["window"] = map[string]float64{"start": from, "end": to}
	instances := make([]string, len(m.endpoints))
	for i, e := range m.endpoints {
		instances[i] = e.instance
	}
	obs["endpoints"] = instances
	if m.prom != nil {
		obs["prometheus_url"] = m.prom.shown
		obs["clock_alignment"] = m.alignment
		if obs["clock_alignment"] == nil {
			obs["clock_alignment"] = unavailableAlignment(nil)
		}
		if len(m.queryErrs) > 0 {
			obs["query_errors"] = m.queryErrs
		}
	} else {
		obs["metrics_url"] = m.endpoints[0].metrics
		obs["scrape_errors"] = m.errs
		// No Prometheus range queries ran, so there is no query window to align.
		obs["clock_alignment"] = unavailableAlignment(nil)
		if m.lastErr != "" {
			obs["last_scrape_error"] = m.lastErr
		}
	}
	out := ev.metrics()
	out["observability"] = obs
	return out
}

// snapshot is the run's resource_snapshot: each serving endpoint's resources at completion
// (its cache configuration and the serving gauges), best effort within 30 s; an endpoint that
// cannot be read is recorded so, and a snapshot with none readable is unavailable.
func (m *monitor) snapshot(ctx context.Context) map[string]any {
	ctx, cancel := context.WithTimeout(ctx, snapshotDeadline)
	defer cancel()
	var rows []map[string]any
	if m.prom != nil {
		rows = m.prom.snapshot(ctx, m.endpoints)
	} else {
		rows = make([]map[string]any, len(m.endpoints))
		var wg sync.WaitGroup
		for i, e := range m.endpoints {
			wg.Go(func() { rows[i] = m.scrapeSnapshot(ctx, e) })
		}
		wg.Wait()
	}
	return snapshotOf(rows, m.source(), time.Now())
}

// release undoes the monitoring setup of the run (a discovery file it wrote), once its
// evidence and snapshot are taken.
func (m *monitor) release() error {
	if m.prom == nil {
		return nil
	}
	return m.prom.release()
}

// scrapeSnapshot reads one endpoint's resources from its /metrics.
func (m *monitor) scrapeSnapshot(ctx context.Context, e servingEndpoint) map[string]any {
	row := map[string]any{"endpoint": e.base, "instance": e.instance}
	families, err := m.readMetrics(ctx, e.metrics)
	if err != nil {
		row["status"], row["reason"] = "unavailable", err.Error()
		return row
	}
	row["status"] = "captured"
	if f, ok := families[seriesCacheConfig]; ok && len(f.GetMetric()) > 0 {
		labels := map[string]string{}
		for _, lp := range f.GetMetric()[0].GetLabel() {
			labels[lp.GetName()] = lp.GetValue()
		}
		row["cache_config"] = labels
	}
	gauges := map[string]float64{}
	for _, name := range snapshotGauges {
		if f, ok := families[name]; ok {
			total := 0.0
			for _, metric := range f.GetMetric() {
				total += valueOf(f.GetType(), metric)
			}
			gauges[name] = total
		}
	}
	row["gauges"] = gauges
	return row
}

// snapshotGauges are the gauges a resource snapshot records (with the cache configuration).
var snapshotGauges = []string{seriesRunning, seriesWaiting, seriesKVUsage, "process_resident_memory_bytes", "process_cpu_seconds_total", "process_open_fds"}

// snapshotOf assembles the resource_snapshot from its per-endpoint rows.
func snapshotOf(rows []map[string]any, source string, at time.Time) map[string]any {
	status := "unavailable"
	for _, r := range rows {
		if r["status"] == "captured" {
			status = "captured"
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return fmt.Sprint(rows[i]["instance"]) < fmt.Sprint(rows[j]["instance"]) })
	return map[string]any{"status": status, "source": source, "captured_at": at.UTC().Format(time.RFC3339Nano), "endpoints": rows}
}
