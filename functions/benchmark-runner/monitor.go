package benchmarkrunner

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/lensfn/lensfn/runtime/egress"
)

// Series the runner reads from a vLLM-compatible /metrics (gauges and counters).
const (
	seriesRunning       = "vllm:num_requests_running"
	seriesWaiting       = "vllm:num_requests_waiting"
	seriesKVUsage       = "vllm:kv_cache_usage_perc"
	seriesPrefixHits    = "vllm:prefix_cache_hits_total"
	seriesPrefixQueries = "vllm:prefix_cache_queries_total"
	seriesGenTokens     = "vllm:generation_tokens_total"
	seriesPromptTokens  = "vllm:prompt_tokens_total"
	maxScrapeBytes      = 8 << 20
)

var scraped = []string{seriesRunning, seriesWaiting, seriesKVUsage, seriesPrefixHits, seriesPrefixQueries, seriesGenTokens, seriesPromptTokens}

// sample is one scrape: each series' value summed over its label sets; absent series are absent.
type sample struct {
	at     float64 // seconds since the monitor started (the run's own timeline)
	values map[string]float64
}

// monitor scrapes an endpoint's /metrics during a run (without a Prometheus, the runner is its
// own scraper) and turns the samples into evidence. Missing series stay unavailable, never 0.
type monitor struct {
	url string // what the evidence names: the scraped URLs, comma-separated
	// urls are scraped together and each series summed over them: the endpoint's own /metrics,
	// or a routed deployment's replicas (a router's /metrics has no vllm series).
	urls   []string
	client *http.Client
	start  time.Time

	mu      sync.Mutex
	samples []sample
	errs    int
	lastErr string
}

// metricsURL is the /metrics of an OpenAI base URL (http://host:8000/v1 -> http://host:8000/metrics).
func metricsURL(endpoint string) string {
	base := strings.TrimRight(endpoint, "/")
	base = strings.TrimSuffix(base, "/v1")
	return base + "/metrics"
}

// newMonitor scrapes the run's replica metrics when it names them, else the endpoint's.
func newMonitor(endpoint string, replicaMetrics []string, client *http.Client, start time.Time) *monitor {
	urls := replicaMetrics
	if len(urls) == 0 {
		urls = []string{metricsURL(endpoint)}
	}
	return &monitor{url: strings.Join(urls, ","), urls: urls, client: client, start: start}
}

// scrape reads every /metrics once and sums each series over them; a URL that fails fails the
// sample (a partial sum would read as a drop).
func (m *monitor) scrape(ctx context.Context) (map[string]float64, error) {
	out := map[string]float64{}
	for _, u := range m.urls {
		values, err := m.scrapeOne(ctx, u)
		if err != nil {
			return nil, err
		}
		for k, v := range values {
			out[k] += v
		}
	}
	return out, nil
}

// scrapeOne reads one /metrics.
func (m *monitor) scrapeOne(ctx context.Context, url string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("/metrics could not be read: %w", egress.Reason(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics answered HTTP %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(io.LimitReader(resp.Body, maxScrapeBytes))
	if err != nil {
		return nil, fmt.Errorf("/metrics is not Prometheus text: %v", err)
	}
	out := map[string]float64{}
	for _, name := range scraped {
		f, ok := families[name]
		if !ok {
			continue
		}
		total := 0.0
		for _, metric := range f.GetMetric() {
			total += valueOf(f.GetType(), metric)
		}
		out[name] = total
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

// ready waits until the endpoint is up (its /metrics answers) and shows two samples of the
// inference gauge, or ctx ends; it returns the preflight evidence or why it is not ready.
func (m *monitor) ready(ctx context.Context) (map[string]any, error) {
	seen := 0
	var last string
	for {
		values, err := m.scrape(ctx)
		switch {
		case err != nil:
			last = err.Error()
		case !has(values, seriesRunning):
			last = "/metrics has no " + seriesRunning + " gauge"
		default:
			seen++
			if seen >= 2 {
				return map[string]any{"up": 1, "gauge": seriesRunning, "samples": seen, "metrics_url": m.url, "checked_at": time.Now().UTC().Format(time.RFC3339Nano)}, nil
			}
			last = ""
		}
		select {
		case <-ctx.Done():
			if last == "" {
				last = "only one sample of " + seriesRunning + " arrived"
			}
			return nil, fmt.Errorf("%s", last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func has(values map[string]float64, name string) bool {
	_, ok := values[name]
	return ok
}

// run scrapes every interval until ctx ends.
func (m *monitor) run(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		values, err := m.scrape(ctx)
		m.mu.Lock()
		if err != nil {
			if ctx.Err() == nil {
				m.errs++
				m.lastErr = err.Error()
			}
		} else {
			m.samples = append(m.samples, sample{at: time.Since(m.start).Seconds(), values: values})
		}
		m.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// flowReason is the spec's wording when no traffic samples were recorded.
const flowReason = "No inference request or token samples were recorded during the benchmark window. Resource samples do not establish serving traffic monitoring."

// evidence summarises the samples whose time falls in [from, to] (seconds on the monitor's
// clock): means of the gauges, the prefix cache hit rate and token deltas of the counters.
// A series without samples is reported unavailable, never as zero.
func (m *monitor) evidence(from, to float64) map[string]any {
	m.mu.Lock()
	defer m.mu.Unlock()
	var window []sample
	for _, s := range m.samples {
		if s.at >= from && s.at <= to {
			window = append(window, s)
		}
	}
	series := map[string]any{}
	mean := func(name string) any {
		sum, n := 0.0, 0
		for _, s := range window {
			if v, ok := s.values[name]; ok {
				sum += v
				n++
			}
		}
		if n == 0 {
			series[name] = "unavailable"
			return nil
		}
		series[name] = "available"
		return round3(sum / float64(n))
	}
	delta := func(name string) (float64, bool) {
		first, last := math.NaN(), math.NaN()
		for _, s := range window {
			if v, ok := s.values[name]; ok {
				if math.IsNaN(first) {
					first = v
				}
				last = v
			}
		}
		if math.IsNaN(first) {
			series[name] = "unavailable"
			return 0, false
		}
		series[name] = "available"
		return max(last-first, 0), true
	}
	out := map[string]any{
		"queue_depth":      mean(seriesWaiting),
		"running_requests": mean(seriesRunning),
		"kv_cache_usage":   mean(seriesKVUsage),
	}
	hits, okHits := delta(seriesPrefixHits)
	queries, okQueries := delta(seriesPrefixQueries)
	out["prefix_cache_hit_rate"] = nil
	if okHits && okQueries && queries > 0 {
		out["prefix_cache_hit_rate"] = round3(hits / queries)
	}
	gen, okGen := delta(seriesGenTokens)
	prompt, okPrompt := delta(seriesPromptTokens)
	status := "unavailable"
	if len(window) > 0 {
		status = "available"
	}
	obs := map[string]any{"status": status, "source": "scrape", "metrics_url": m.url, "samples": len(window),
		"window": map[string]float64{"start": from, "end": to}, "series": series, "scrape_errors": m.errs,
		"clock_alignment": map[string]any{"status": "unavailable", "offset_seconds": nil, "query_window": nil}}
	if m.lastErr != "" {
		obs["last_scrape_error"] = m.lastErr
	}
	if (okGen && gen > 0) || (okPrompt && prompt > 0) {
		obs["flow_status"], obs["flow_reason"] = "available", nil
	} else {
		obs["flow_status"], obs["flow_reason"] = "unavailable", flowReason
	}
	out["observability"] = obs
	return out
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
