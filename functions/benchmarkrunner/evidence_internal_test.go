package benchmarkrunner

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func f(v float64) *float64 { return &v }

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestDerivedFormulas(t *testing.T) {
	if cv := coefficientOfVariation([]*float64{f(100), f(300)}); cv == nil || !near(*cv, 0.5, 1e-12) {
		t.Fatalf("cv of 100, 300 = %v, want 0.5 (population sd 100 / mean 200)", cv)
	}
	if cv := coefficientOfVariation([]*float64{f(7), f(7), f(7)}); cv == nil || *cv != 0 {
		t.Fatalf("cv of an even load = %v, want 0", cv)
	}
	for name, loads := range map[string][]*float64{"one endpoint": {f(5)}, "a missing load": {f(5), nil}, "no load": {f(0), f(0)}} {
		if cv := coefficientOfVariation(loads); cv != nil {
			t.Fatalf("%s: cv %v, want unavailable", name, *cv)
		}
	}
	if r := hitRate(f(30), f(120)); r == nil || *r != 0.25 {
		t.Fatalf("hit rate %v", r)
	}
	if r := hitRate(f(0), f(0)); r != nil {
		t.Fatalf("hit rate without queries %v, want unavailable", *r)
	}
	if r := hitRate(nil, f(10)); r != nil {
		t.Fatal("hit rate without a hits series")
	}
	s := shares([]*float64{f(1), f(3)})
	if *s[0] != 0.25 || *s[1] != 0.75 {
		t.Fatalf("shares %v %v", *s[0], *s[1])
	}
	if s := shares([]*float64{f(1), nil}); s[0] != nil || s[1] != nil {
		t.Fatal("shares of a partly unknown total")
	}
	// A counter that restarts (the endpoint restarted) counts from zero again.
	window := []sample{{at: 0, values: map[string]float64{"c": 10}}, {at: 1, values: map[string]float64{"c": 15}},
		{at: 2, values: map[string]float64{"c": 4}}, {at: 3, values: map[string]float64{"c": 6}}}
	if d := deltaOf(window, "c"); d == nil || *d != 5+4+2 {
		t.Fatalf("delta over a reset %v, want 11", d)
	}
	if d := deltaOf(window, "absent"); d != nil {
		t.Fatal("delta of an absent series")
	}
}

func TestMissingSeriesAreUnavailableNotZero(t *testing.T) {
	eps := []servingEndpoint{{base: "http://a:1", instance: "a:1"}, {base: "http://b:1", instance: "b:1"}}
	samples := [][]sample{
		{{at: 1, values: map[string]float64{seriesRunning: 2, seriesGenTokens: 100, seriesPromptTokens: 0, seriesRequests: 0}},
			{at: 2, values: map[string]float64{seriesRunning: 4, seriesGenTokens: 400, seriesPromptTokens: 100, seriesRequests: 3}}},
		{{at: 1, values: map[string]float64{seriesRunning: 1, seriesGenTokens: 0, seriesPromptTokens: 0, seriesRequests: 0}},
			{at: 2, values: map[string]float64{seriesRunning: 1, seriesGenTokens: 100, seriesPromptTokens: 100, seriesRequests: 1}}},
	}
	w := summarize(eps, samples, 0, 10)
	m := w.metrics()
	// running: mean 3 on a, 1 on b; the fleet's running requests add up.
	if m["running_requests"] != 4.0 {
		t.Fatalf("running_requests %v", m["running_requests"])
	}
	for _, k := range []string{"queue_depth", "kv_cache_usage", "prefix_cache_hit_rate"} {
		if v, ok := m[k]; !ok || v != nil {
			t.Fatalf("%s = %v, want null (no samples of its series)", k, v)
		}
	}
	if w.series[seriesWaiting] != "unavailable" || w.series[seriesRunning] != "available" {
		t.Fatalf("series %v", w.series)
	}
	// tokens: a carried 300+100 = 400, b 100+100 = 200: mean 300, sd 100.
	if cv := m["token_load_cv"]; cv != round3(100.0/300) {
		t.Fatalf("token_load_cv %v", cv)
	}
	per := m["per_endpoint"].([]map[string]any)
	if per[0]["request_share"] != 0.75 || per[1]["request_share"] != 0.25 || per[0]["queue_depth"] != nil {
		t.Fatalf("per endpoint %v", per)
	}
	if d := m["request_destination_distribution"].(map[string]any); d["a:1"] != 0.75 || d["b:1"] != 0.25 {
		t.Fatalf("distribution %v", d)
	}
	if obs := w.observability(); obs["status"] != "available" || obs["flow_status"] != "available" || obs["flow_reason"] != nil {
		t.Fatalf("observability %v", obs)
	}
	// Resources without traffic: available samples, no flow, the spec's reason.
	idle := summarize(eps[:1], [][]sample{{{at: 1, values: map[string]float64{seriesKVUsage: 0.1, seriesGenTokens: 5}},
		{at: 2, values: map[string]float64{seriesKVUsage: 0.1, seriesGenTokens: 5}}}}, 0, 10)
	if obs := idle.observability(); obs["status"] != "available" || obs["flow_status"] != "unavailable" || obs["flow_reason"] != flowReason {
		t.Fatalf("idle observability %v", obs)
	}
	if m := idle.metrics(); m["token_load_cv"] != nil || m["kv_cache_usage"] != 0.1 {
		t.Fatalf("single endpoint: %v", m)
	}
	// Outside the window nothing counts.
	if obs := summarize(eps, samples, 5, 6).observability(); obs["status"] != "unavailable" || obs["samples"] != 0 {
		t.Fatalf("empty window %v", obs)
	}
}

func TestClockOffsetAndWindows(t *testing.T) {
	sent := time.Unix(1000, 0)
	received := sent.Add(200 * time.Millisecond)
	// Prometheus read 1100.1 at our 1000.1: it is 100 s ahead.
	if off := clockOffset(1100.1, sent, received); !near(off, 100, 1e-9) {
		t.Fatalf("offset %v", off)
	}
	start, end := time.Unix(2000, 0), time.Unix(2060, 0)
	qs, qe := alignedWindow(start, end, -2.5)
	if !qs.Equal(time.Unix(1997, 5e8)) || !qe.Equal(time.Unix(2057, 5e8)) {
		t.Fatalf("window %v %v", qs, qe)
	}
	// A point Prometheus stamped at qs is the Lens window's start: 10 s after a monitor start
	// at 1990 on our clock.
	if at := lensSeconds(qs.UnixMilli(), time.Unix(1990, 0), -2.5); !near(at, 10, 1e-9) {
		t.Fatalf("lens time %v", at)
	}
	a := alignment(true, -2.5, qs, qe)
	if a["status"] != "measured" || a["offset_seconds"] != -2.5 || a["query_window"].(map[string]any)["start"] != "1970-01-01T00:33:17.5Z" {
		t.Fatalf("alignment %v", a)
	}
	u := alignment(false, 0, start, end)
	if u["status"] != "unavailable" || u["offset_seconds"] != nil || u["query_window"].(map[string]any)["end"] != end.UTC().Format(time.RFC3339Nano) {
		t.Fatalf("unavailable alignment %v", u)
	}
}

// fakePrometheus answers the HTTP API as a Prometheus whose clock runs skew ahead of ours,
// holding a constant running gauge of 2 and a generation counter rising 10 a second for
// instance, and no other series.
type fakePrometheus struct {
	skew     time.Duration
	instance string
	noClock  bool

	mu     sync.Mutex
	ranges [][2]float64 // start, end of each range query
}

func (p *fakePrometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	query := r.FormValue("query")
	now := float64(time.Now().Add(p.skew).UnixNano()) / 1e9
	var data string
	switch {
	case r.URL.Path == "/api/v1/query" && query == "time()":
		if p.noClock {
			http.Error(w, `{"status":"error","errorType":"internal","error":"no clock"}`, http.StatusInternalServerError)
			return
		}
		data = fmt.Sprintf(`{"resultType":"scalar","result":[%.3f,"%.3f"]}`, now, now)
	case r.URL.Path == "/api/v1/query" && strings.HasPrefix(query, "{__name__"):
		// The latest scrape, after the window's end: 5 more tokens than at its last point.
		data = fmt.Sprintf(`{"resultType":"vector","result":[{"metric":{"__name__":%q,"instance":%q},"value":[%.3f,"105"]}]}`,
			seriesGenTokens, p.instance, now)
	case r.URL.Path == "/api/v1/query":
		// timestamp() of the latest gauge sample: already past any window's end.
		data = fmt.Sprintf(`{"resultType":"vector","result":[{"metric":{"instance":%q},"value":[%.3f,"%.3f"]}]}`, p.instance, now, now+60)
	case r.URL.Path == "/api/v1/query_range":
		start, _ := strconv.ParseFloat(r.FormValue("start"), 64)
		end, _ := strconv.ParseFloat(r.FormValue("end"), 64)
		step, _ := strconv.ParseFloat(r.FormValue("step"), 64)
		p.mu.Lock()
		p.ranges = append(p.ranges, [2]float64{start, end})
		p.mu.Unlock()
		var points []string
		for ts := start; ts <= end+1e-9; ts += step {
			v := -1.0
			switch {
			case strings.Contains(query, seriesRunning):
				v = 2
			case strings.Contains(query, seriesGenTokens):
				v = 10 * (ts - start)
			}
			if v >= 0 {
				points = append(points, fmt.Sprintf(`[%.3f,"%g"]`, ts, v))
			}
		}
		result := "[]"
		if len(points) > 0 {
			result = fmt.Sprintf(`[{"metric":{"instance":%q},"values":[%s]}]`, p.instance, strings.Join(points, ","))
		}
		data = `{"resultType":"matrix","result":` + result + `}`
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"status":"success","data":%s}`, data)
}

func collectThrough(t *testing.T, p *fakePrometheus) (*monitor, time.Time, float64, float64) {
	t.Helper()
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	src, err := newPromSource(srv.URL, 500*time.Millisecond, "")
	if err != nil {
		t.Fatal(err)
	}
	ep, _ := newServingEndpoint("http://" + p.instance + "/v1")
	start := time.Now().Add(-20 * time.Second)
	m := newMonitor([]servingEndpoint{ep}, http.DefaultClient, start, src)
	from, to := 5.0, 15.0 // the benchmark ran 5-15 s after the monitor started
	m.finish(context.Background(), from, to)
	return m, start, from, to
}

func TestPrometheusCollectionAlignsTheClock(t *testing.T) {
	p := &fakePrometheus{skew: 100 * time.Second, instance: "127.0.0.1:9001"}
	m, start, from, to := collectThrough(t, p)
	ev := m.evidence(from, to)
	obs := ev["observability"].(map[string]any)
	a := obs["clock_alignment"].(map[string]any)
	off, _ := a["offset_seconds"].(float64)
	if a["status"] != "measured" || !near(off, 100, 0.5) {
		t.Fatalf("clock alignment %v", a)
	}
	lensStart := float64(start.UnixNano())/1e9 + from
	for _, r := range p.ranges {
		if !near(r[0], lensStart+off, 0.002) || !near(r[1]-r[0], to-from, 0.002) {
			t.Fatalf("range query %v, want the Lens window %.3f+%.0f s shifted by %.3f", r, lensStart, to-from, off)
		}
	}
	qw := a["query_window"].(map[string]any)
	qs, _ := time.Parse(time.RFC3339Nano, qw["start"].(string))
	if !near(float64(qs.UnixNano())/1e9, p.ranges[0][0], 0.002) {
		t.Fatalf("query_window %v, queries %v", qw, p.ranges[0])
	}
	// The points land back on the Lens timeline: every sample inside [from, to].
	if len(m.samples[0]) < 10 || !near(m.samples[0][0].at, from, 0.002) || !near(m.samples[0][len(m.samples[0])-1].at, to, 0.5) {
		t.Fatalf("%d samples, first at %v, last at %v", len(m.samples[0]), m.samples[0][0].at, m.samples[0][len(m.samples[0])-1].at)
	}
	// The counter's delta runs from the window's first point (0) to the scrape closing it (105).
	if got := ev["per_endpoint"].([]map[string]any)[0]["generation_tokens"]; got != 105.0 {
		t.Fatalf("generation tokens %v, want 105", got)
	}
	if obs["source"] != "prometheus" || obs["flow_status"] != "available" || ev["running_requests"] != 2.0 || ev["queue_depth"] != nil ||
		obs["series"].(map[string]string)[seriesWaiting] != "unavailable" {
		t.Fatalf("evidence %v", ev)
	}
	// A stage's slice of the window (the rate-stage slicing) is on the Lens timeline too.
	if half := m.evidence(from, from+5)["observability"].(map[string]any); !near(float64(half["samples"].(int)), 11, 1) {
		t.Fatalf("half window %v samples", half["samples"])
	}
	raw, _ := json.Marshal(ev)
	if strings.Contains(string(raw), "NaN") {
		t.Fatalf("evidence has NaN: %s", raw)
	}
}

func TestPrometheusCollectionWithoutAClockKeepsTheWindow(t *testing.T) {
	p := &fakePrometheus{instance: "127.0.0.1:9002", noClock: true}
	m, start, from, to := collectThrough(t, p)
	obs := m.evidence(from, to)["observability"].(map[string]any)
	a := obs["clock_alignment"].(map[string]any)
	if a["status"] != "unavailable" || a["offset_seconds"] != nil {
		t.Fatalf("clock alignment %v", a)
	}
	lensStart := float64(start.UnixNano())/1e9 + from
	if !near(p.ranges[0][0], lensStart, 0.002) || !near(p.ranges[0][1], lensStart+to-from, 0.002) {
		t.Fatalf("queries %v, want the original window from %.3f", p.ranges[0], lensStart)
	}
	if qw := a["query_window"].(map[string]any); qw["start"] != start.Add(5*time.Second).UTC().Format(time.RFC3339Nano) {
		t.Fatalf("query_window %v", qw)
	}
	if errs := obs["query_errors"].([]string); len(errs) != 1 || !strings.Contains(errs[0], "clock alignment") {
		t.Fatalf("query errors %v", errs)
	}
}

// The engine's mechanisms reach a run's metrics: preemptions and tokens per step from its
// /metrics (the histogram's sum and count read from the text format as Prometheus stores
// them), beside the queue and batch means, under mechanism_metrics.
func TestMechanismMetricsFromAnEngine(t *testing.T) {
	step := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		step++
		fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 40\n"+
			"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\"} 6\n"+
			"# TYPE vllm:num_preemptions_total counter\nvllm:num_preemptions_total{model_name=\"m\"} %d\n"+
			"# TYPE vllm:iteration_tokens_total histogram\nvllm:iteration_tokens_total_bucket{model_name=\"m\",le=\"+Inf\"} %d\n"+
			"vllm:iteration_tokens_total_sum{model_name=\"m\"} %d\nvllm:iteration_tokens_total_count{model_name=\"m\"} %d\n",
			3*step, 10*step, 420*step, 10*step)
	}))
	defer srv.Close()
	e, err := newServingEndpoint(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	m := &monitor{client: srv.Client()}
	var window []sample
	for i := 0; i < 3; i++ {
		v, err := m.scrape(context.Background(), e)
		if err != nil {
			t.Fatal(err)
		}
		window = append(window, sample{at: float64(i), values: v})
	}
	ev := summarize([]servingEndpoint{e}, [][]sample{window}, 0, 10).metrics()
	mech, _ := ev["mechanism_metrics"].(map[string]any)
	want := map[string]any{"preemptions": 6.0, "tokens_per_step": 42.0, "queue_depth": 6.0, "running_requests_per_endpoint": 40.0}
	for k, v := range want {
		if mech[k] != v {
			t.Errorf("mechanism_metrics[%s] = %v, want %v (all: %v)", k, mech[k], v, mech)
		}
	}
	if _, ok := mech["prefix_cache_hit_rate"]; ok {
		t.Errorf("an unavailable series is in mechanism_metrics: %v", mech)
	}
}
