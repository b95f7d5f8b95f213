package local

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Without prometheus on PATH nothing changes: no Prometheus, no URL or discovery directory
// for any function, no discovery files (the benchmark runner scrapes /metrics itself).
func TestWithoutPrometheusOnPathNothingChanges(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var logged []string
	s := &Stack{opts: Options{StartPrometheus: true, DataDir: t.TempDir(), Log: func(f string, _ ...any) { logged = append(logged, f) }}}
	if err := s.startPrometheus(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s.PrometheusURL != "" || s.prometheus != nil || s.prometheusEnv("benchmark-runner") != nil || s.prometheusEnv("deployer") != nil {
		t.Fatalf("a Prometheus without prometheus: %q %v", s.PrometheusURL, s.prometheusEnv("benchmark-runner"))
	}
	if err := s.listForPrometheus(SimulatorService, 8000); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.opts.DataDir, "prometheus")); !os.IsNotExist(err) {
		t.Fatalf("prometheus files written: %v", err)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "not on PATH") {
		t.Fatalf("logged %q", logged)
	}
}

// With prometheus on PATH the stack runs it on loopback, lists the simulator for it, and
// tells the benchmark runner and the deployer; Stop stops it.
func TestPrometheusRunsOnLoopbackWithTheSimulatorAsATarget(t *testing.T) {
	if _, err := exec.LookPath("prometheus"); err != nil {
		t.Skip("prometheus is not on PATH (apt-get install prometheus): the stack's Prometheus is not tested")
	}
	s := &Stack{opts: Options{StartPrometheus: true, DataDir: t.TempDir(), Log: t.Logf}}
	if err := s.startPrometheus(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stopPrometheus)
	if !strings.HasPrefix(s.PrometheusURL, "http://127.0.0.1:") {
		t.Fatalf("URL %q", s.PrometheusURL)
	}
	env := s.prometheusEnv("benchmark-runner")
	if env["LENS_PROMETHEUS_URL"] != s.PrometheusURL || env["LENS_PROMETHEUS_TARGETS_DIR"] != s.prometheusTargets ||
		s.prometheusEnv("deployer")["LENS_PROMETHEUS_TARGETS_DIR"] != s.prometheusTargets || s.prometheusEnv("simulation-api") != nil {
		t.Fatalf("env %v", env)
	}
	if err := s.listForPrometheus(SimulatorService, 8123); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(s.prometheusTargets, "stack-inference-sim.json"))
	var groups []struct{ Targets []string }
	if err != nil || json.Unmarshal(raw, &groups) != nil || groups[0].Targets[0] != "127.0.0.1:8123" {
		t.Fatalf("discovery file %s %v", raw, err)
	}
	pid := s.prometheus.pid()
	s.stopPrometheus()
	if pid == 0 || syscall.Kill(pid, 0) == nil {
		t.Fatalf("prometheus (pid %d) survived Stop", pid)
	}
}
