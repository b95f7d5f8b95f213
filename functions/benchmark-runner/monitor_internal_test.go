package benchmarkrunner

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A routed deployment's evidence is its replicas': the monitor scrapes every replica's /metrics
// and sums each series, and a replica that does not answer fails the sample rather than reading
// as a drop.
func TestMonitorSumsReplicaMetrics(t *testing.T) {
	replica := func(running, hits int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} %d\n"+
				"# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total{model_name=\"m\"} %d\n", running, hits)
		}))
		t.Cleanup(srv.Close)
		return srv.URL + "/metrics"
	}
	a, b := replica(2, 10), replica(3, 5)
	m := newMonitor("http://127.0.0.1:1/v1", []string{a, b}, http.DefaultClient, time.Now())
	values, err := m.scrape(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if values[seriesRunning] != 5 || values[seriesPrefixHits] != 15 {
		t.Fatalf("summed %v, want running 5 and hits 15", values)
	}
	if m.url != a+","+b {
		t.Fatalf("evidence names %q", m.url)
	}
	down := newMonitor("", []string{a, "http://127.0.0.1:1/metrics"}, http.DefaultClient, time.Now())
	if _, err := down.scrape(context.Background()); err == nil {
		t.Fatal("a replica that does not answer must fail the sample")
	}
	if own := newMonitor("http://127.0.0.1:9/v1", nil, http.DefaultClient, time.Now()); own.url != "http://127.0.0.1:9/metrics" {
		t.Fatalf("without replicas the endpoint's own /metrics: %q", own.url)
	}
}
