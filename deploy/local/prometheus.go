package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/lensfn/lensfn/runtime/promtargets"
)

// prometheusScrapeInterval is how often the stack's Prometheus scrapes the serving endpoints
// (and re-reads its discovery files): benchmarks on the local stack last seconds.
const prometheusScrapeInterval = "1s"

// prometheusConfig scrapes every target listed in the discovery directory's files: the stack's
// simulator, and each deployment the deployer's local provider starts.
const prometheusConfig = `# Written by lensfn-local at every start; edits are overwritten.
global:
  scrape_interval: %[1]s
  scrape_timeout: %[1]s
  evaluation_interval: %[1]s
scrape_configs:
  - job_name: lensfn-serving
    file_sd_configs:
      - files: [%[2]q]
        refresh_interval: %[1]s
`

// startPrometheus starts Debian's prometheus when asked for and on PATH, supervised like
// redis-server, bound to loopback, with file-based discovery in <data dir>/prometheus/targets;
// without it nothing changes (the benchmark runner scrapes /metrics itself).
func (s *Stack) startPrometheus(ctx context.Context) error {
	if !s.opts.StartPrometheus {
		return nil
	}
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		s.opts.Log("prometheus is not on PATH: the benchmark runner scrapes the endpoints' /metrics itself")
		return nil
	}
	dir := filepath.Join(s.opts.DataDir, "prometheus")
	targets := filepath.Join(dir, "targets")
	if err := os.MkdirAll(targets, 0o700); err != nil {
		return err
	}
	conf := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(conf, fmt.Appendf(nil, prometheusConfig, prometheusScrapeInterval, filepath.Join(targets, "*.json")), 0o600); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	p := &process{name: "prometheus", bin: bin, port: port, readiness: "/-/ready", log: s.opts.Log,
		logPath: filepath.Join(s.opts.DataDir, "logs", "prometheus.log"),
		args: []string{"--config.file=" + conf, "--storage.tsdb.path=" + filepath.Join(dir, "data"),
			"--storage.tsdb.retention.time=7d", "--web.listen-address=127.0.0.1:" + strconv.Itoa(port), "--log.level=warn"}}
	if err := os.MkdirAll(filepath.Dir(p.logPath), 0o700); err != nil {
		return err
	}
	s.prometheus = p
	p.supervise()
	if err := p.waitReady(ctx, time.Now().Add(30*time.Second)); err != nil {
		return err
	}
	s.PrometheusURL, s.prometheusTargets = p.url(), targets
	s.opts.Log("prometheus %s, discovering serving endpoints in %s", s.PrometheusURL, targets)
	return nil
}

// prometheusEnv is what a function learns of the stack's Prometheus: the benchmark runner
// queries it, the deployer lists its deployments for it.
func (s *Stack) prometheusEnv(service string) map[string]string {
	if s.PrometheusURL == "" {
		return nil
	}
	switch service {
	case "benchmark-runner":
		// It lists a benchmarked endpoint Prometheus does not scrape yet for the run's duration.
		return map[string]string{"LENS_PROMETHEUS_URL": s.PrometheusURL, "LENS_PROMETHEUS_TARGETS_DIR": s.prometheusTargets}
	case "deployer":
		return map[string]string{"LENS_PROMETHEUS_TARGETS_DIR": s.prometheusTargets}
	}
	return nil
}

// listForPrometheus adds a function the stack serves inference from (the simulator) to the
// stack's Prometheus targets.
func (s *Stack) listForPrometheus(service string, port int) error {
	if s.prometheusTargets == "" || service != SimulatorService {
		return nil
	}
	return promtargets.Write(s.prometheusTargets, "stack-"+service, []string{"127.0.0.1:" + strconv.Itoa(port)},
		map[string]string{"lens_service": service})
}

// stopPrometheus stops the stack's Prometheus (after the functions, so a benchmark's last
// queries are answered while it drains).
func (s *Stack) stopPrometheus() {
	if s.prometheus != nil {
		s.prometheus.stop(10 * time.Second)
	}
}
