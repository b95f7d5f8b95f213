package benchmarkrunner_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/benchmarkrunner"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
)

func TestReadSettings(t *testing.T) {
	read := func(env map[string]string) (benchmarkrunner.Settings, error) {
		return benchmarkrunner.ReadSettings(fntest.Config(t, fntest.Env(t, env)))
	}
	s, err := read(nil)
	if err != nil || s.MaxConcurrent != 1 || s.MaxWorkers != 32 || s.LeaseTTL != 15*time.Second || s.SweepInterval != 2*time.Second ||
		s.ScrapeInterval != time.Second || s.PollInterval != 250*time.Millisecond || s.WorkerHold != 540*time.Second || s.PrometheusURL != "" {
		t.Fatalf("defaults %+v, %v", s, err)
	}
	s, err = read(map[string]string{"LENS_MAX_CONCURRENT_RUNS": "4", "LENS_MAX_CONCURRENT_WORKERS": "64", "LENS_SCRAPE_INTERVAL": "250ms",
		"LENS_PROMETHEUS_URL": " http://127.0.0.1:9090/ ", "LENS_PROMETHEUS_TARGETS_DIR": "/targets"})
	if err != nil || s.MaxConcurrent != 4 || s.MaxWorkers != 64 || s.ScrapeInterval != 250*time.Millisecond ||
		s.PrometheusURL != "http://127.0.0.1:9090" || s.PrometheusTargetsDir != "/targets" {
		t.Fatalf("set %+v, %v", s, err)
	}
	for _, tc := range []struct{ key, value, wantErr string }{
		{"LENS_MAX_CONCURRENT_RUNS", "0", "LENS_MAX_CONCURRENT_RUNS=0 is not an integer in 1-64"},
		{"LENS_MAX_CONCURRENT_WORKERS", "65", "LENS_MAX_CONCURRENT_WORKERS=65 is not an integer in 1-64"},
		{"LENS_MAX_CONCURRENT_WORKERS", "lots", `LENS_MAX_CONCURRENT_WORKERS="lots" is not an integer`},
		{"LENS_SCRAPE_INTERVAL", "1ms", "LENS_SCRAPE_INTERVAL=1ms is not a duration from 10ms to 1h"},
		{"LENS_LEASE_TTL", "0s", "LENS_LEASE_TTL must be a positive duration"},
		{"LENS_PROMETHEUS_URL", "ftp://prom", "LENS_PROMETHEUS_URL is not an http(s) URL"},
	} {
		if _, err := read(map[string]string{tc.key: tc.value}); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s=%s: err = %v, want %q", tc.key, tc.value, err, tc.wantErr)
		}
	}
}
