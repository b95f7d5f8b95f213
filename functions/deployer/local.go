package deployer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lensfn/lensfn/runtime/deployconfig"
	"github.com/lensfn/lensfn/runtime/promtargets"
)

// Binaries the local provider runs, from its BinDir.
const (
	SimulatorBinary = "inference-sim"
	RouterBinary    = "inference-router"
)

// Local is the local provider: inference-sim replicas (decode, and prefill for P/D) and, where
// the configuration routes, an inference-router in front, as child processes on loopback ports.
// Each process runs in its own process group, so it outlives a killed deployer; the record
// holds its pid and start time, which is how a later deployer recognises (and stops) exactly
// the processes it started and never a process that reused the pid.
//
// baseline-vllm has no content-aware routing: one replica is the endpoint itself; several are
// put behind the router's plain balanced endpoint (/balanced/v1, round robin per request with no
// look at the body), which stands in for a Kubernetes Service's connection-level balancing.
type Local struct {
	BinDir       string
	LogDir       string
	ReadyTimeout time.Duration
	// StopGrace is how long a stopped process may drain before SIGKILL (default 10s).
	StopGrace time.Duration
	// TargetsDir, when set, gets a Prometheus file-SD file per deployment listing its
	// replicas (the serving endpoints a benchmark's evidence comes from), removed at cleanup.
	TargetsDir string
	// Ports hands out the loopback ports the children bind (nil: a free port from the kernel).
	// A port is free when handed out, not when the child binds it, so Deploy retries with new
	// ports when another process took one in between.
	Ports func() (int, error)

	mu       sync.Mutex
	children map[int]chan struct{} // pid -> closed when this process reaped it
}

func (l *Local) binary(name string) (string, error) {
	p := filepath.Join(l.BinDir, name)
	if st, err := os.Stat(p); err != nil || st.IsDir() {
		return "", fmt.Errorf("the local provider needs %s in %s (make build, or set LENS_BIN_DIR)", name, l.BinDir)
	}
	return p, nil
}

func (l *Local) port() (int, error) {
	if l.Ports != nil {
		return l.Ports()
	}
	return freePort()
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func baseURL(port int) string { return "http://127.0.0.1:" + strconv.Itoa(port) }

// portAttempts bounds how often a deployment is restarted on new ports because a child found
// its port taken: a race with another process, not a configuration error, so worth a retry.
const portAttempts = 3

// Deploy starts the processes, saving the record after each one, then waits for every health
// probe. When a child could not bind the port it was given (another process took it after it
// was handed out), what was started is stopped and the deployment starts again on new ports.
func (l *Local) Deploy(ctx context.Context, d *Deployment, cfg deployconfig.Deployment, save func(context.Context) error) error {
	for try := 1; ; try++ {
		err := l.deployOnce(ctx, d, cfg, save, try)
		if err == nil || try == portAttempts || !l.lostPort(d) {
			return err
		}
		// save is fenced: a worker whose lease was taken over stops here, before its cleanup
		// could stop the new owner's children (they carry the same deployment id).
		if serr := save(ctx); serr != nil {
			return errors.Join(err, serr)
		}
		if cerr := l.Cleanup(ctx, d); cerr != nil {
			return errors.Join(err, cerr)
		}
		d.Endpoint, d.BaselineURL, d.ReplicaEndpoints = "", "", nil
		if serr := save(ctx); serr != nil {
			return serr
		}
	}
}

// lostPort says whether a child of d exited because its port was in use.
func (l *Local) lostPort(d *Deployment) bool {
	for _, p := range d.Processes {
		if tail, _ := readTail(p.Log, excerptWindow); !alive(p) && strings.Contains(tail, "address already in use") {
			return true
		}
	}
	return false
}

// deployOnce is one try of Deploy on newly chosen ports.
func (l *Local) deployOnce(ctx context.Context, d *Deployment, cfg deployconfig.Deployment, save func(context.Context) error, try int) error {
	c := cfg.Content
	if c.Runtime != nil && c.Runtime.Image != "" {
		return fmt.Errorf("the local provider runs the simulator only; runtime.image %q needs the knative provider", c.Runtime.Image)
	}
	sim, err := l.binary(SimulatorBinary)
	if err != nil {
		return err
	}
	profile := cfg.Profile()
	if cfg.ProviderRef == deployconfig.ProviderBaselineVLLM && c.Decode.Replicas > 1 {
		profile = deployconfig.ProfileRandom // only its balanced endpoint is used
	}
	type planned struct {
		role string
		port int
	}
	var plan []planned
	for range c.Decode.Replicas {
		plan = append(plan, planned{role: "decode"})
	}
	if c.Prefill != nil {
		for range c.Prefill.Replicas {
			plan = append(plan, planned{role: "prefill"})
		}
	}
	for i := range plan {
		if plan[i].port, err = l.port(); err != nil {
			return err
		}
	}
	var decodeURLs, prefillURLs []string
	for _, p := range plan {
		if p.role == "decode" {
			decodeURLs = append(decodeURLs, baseURL(p.port))
		} else {
			prefillURLs = append(prefillURLs, baseURL(p.port))
		}
	}
	d.ReplicaEndpoints = append(slices.Clone(decodeURLs), prefillURLs...)
	replicaArgs := c.ReplicaArgs()
	var zmq string
	if profile == deployconfig.ProfilePrecisePrefix {
		zport, err := l.port()
		if err != nil {
			return err
		}
		zmq = "tcp://127.0.0.1:" + strconv.Itoa(zport)
		replicaArgs = append(replicaArgs, "--enable-kvcache=true", "--zmq-endpoint="+zmq)
	}
	// The router starts first: a precise-prefix router must bind its SUB socket before the
	// replicas publish (ZMQ drops what is sent before a subscriber connects).
	var router *Process
	if profile != "" {
		bin, err := l.binary(RouterBinary)
		if err != nil {
			return err
		}
		port, err := l.port()
		if err != nil {
			return err
		}
		args := []string{"--host", "127.0.0.1", "--port", strconv.Itoa(port), "--profile", profile,
			"--block-size", strconv.Itoa(c.BlockSize()), "--seed", "1"}
		switch profile {
		case deployconfig.ProfilePD:
			args = append(args, "--prefill-replicas", strings.Join(prefillURLs, ","), "--decode-replicas", strings.Join(decodeURLs, ","))
		default:
			args = append(args, "--replicas", strings.Join(decodeURLs, ","))
		}
		if zmq != "" {
			args = append(args, "--zmq-endpoint", zmq)
			if seed := c.HashSeed(); seed != "" {
				args = append(args, "--hash-seed", seed)
			}
		}
		p, err := l.start(d, try, "router", bin, port, args)
		if err != nil {
			return err
		}
		router = &p
		if err := save(ctx); err != nil {
			return err
		}
	}
	for _, pl := range plan {
		if _, err := l.start(d, try, pl.role, sim, pl.port, append(slices.Clone(replicaArgs), "--host", "127.0.0.1", "--port", strconv.Itoa(pl.port))); err != nil {
			return err
		}
		if err := save(ctx); err != nil {
			return err
		}
	}
	switch {
	case router != nil && cfg.ProviderRef == deployconfig.ProviderBaselineVLLM:
		d.Endpoint = router.URL + "/balanced/v1"
	case router != nil:
		d.Endpoint, d.BaselineURL = router.URL+"/v1", router.URL+"/balanced/v1"
	default:
		d.Endpoint = decodeURLs[0] + "/v1"
	}
	ctx, cancel := context.WithTimeout(ctx, l.ReadyTimeout)
	defer cancel()
	for _, p := range d.Processes {
		if err := l.waitReady(ctx, p, c.Model.Name); err != nil {
			return err
		}
	}
	return l.writeTargets(d)
}

// writeTargets lists the deployment's replicas for Prometheus's file-based discovery.
func (l *Local) writeTargets(d *Deployment) error {
	if l.TargetsDir == "" {
		return nil
	}
	targets := make([]string, 0, len(d.ReplicaEndpoints))
	for _, u := range d.ReplicaEndpoints {
		instance, err := promtargets.Instance(u)
		if err != nil {
			return err
		}
		targets = append(targets, instance)
	}
	return promtargets.Write(l.TargetsDir, d.ExecutionID, targets, map[string]string{"lens_execution_id": d.ExecutionID})
}

// start runs one child and appends it to the record. Its log is the deployer's alone (0600 in
// 0700 directories): the router logs requests, which may carry a client's credentials.
//
// Each deploy attempt (and each try on new ports) logs to files of its own, named
// <role>-<index>.attempt-<attempt>[.try-<try>].log: a taken-over deployment's new children do
// not truncate the logs of the dead worker's, which may still be running until reaped.
func (l *Local) start(d *Deployment, try int, role, bin string, port int, args []string) (Process, error) {
	name := fmt.Sprintf("%s-%d.attempt-%d", role, len(d.Processes), d.Attempts)
	if try > 1 {
		name += fmt.Sprintf(".try-%d", try)
	}
	logPath := filepath.Join(l.LogDir, d.ExecutionID, name+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o700); err != nil {
		return Process{}, err
	}
	// A directory or log an older build created keeps its mode when reused.
	if err := os.Chmod(filepath.Dir(logPath), 0o700); err != nil {
		return Process{}, err
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return Process{}, err
	}
	defer logFile.Close()
	if err := logFile.Chmod(0o600); err != nil {
		return Process{}, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Only what the simulator and router need: the deployer's own secrets stay with it.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LENS_DEPLOYMENT=" + d.ExecutionID,
		// The simulator names its KV-event topic after the replica address; on loopback that is 127.0.0.1.
		"POD_IP=127.0.0.1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return Process{}, fmt.Errorf("start %s: %w", role, err)
	}
	pid := cmd.Process.Pid
	done := make(chan struct{})
	l.mu.Lock()
	if l.children == nil {
		l.children = map[int]chan struct{}{}
	}
	l.children[pid] = done
	l.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		l.mu.Lock()
		delete(l.children, pid)
		l.mu.Unlock()
		close(done)
	}()
	ticks, _ := startTicks(pid)
	p := Process{Role: role, PID: pid, StartTicks: ticks, Port: port, URL: baseURL(port), Log: logPath}
	d.Processes = append(d.Processes, p)
	return p, nil
}

// probeClient talks only to the loopback processes this provider started (never a user-given
// endpoint, so the egress policy does not apply) and never follows a redirect.
var probeClient = &http.Client{Timeout: 2 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// waitReady polls /health, then /v1/models until it lists the model.
func (l *Local) waitReady(ctx context.Context, p Process, model string) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error // the latest probe's failure
	for {
		if !alive(p) {
			return fmt.Errorf("%s (pid %d, %s) exited before it was ready: %s", p.Role, p.PID, p.URL, logExcerpt(p.Log))
		}
		if last = probe(ctx, p.URL+"/health", ""); last == nil {
			if last = probe(ctx, p.URL+"/v1/models", model); last == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%s at %s not ready within %s: %v", p.Role, p.URL, l.ReadyTimeout, last)
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func probe(ctx context.Context, url, model string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := probeClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, res.Status)
	}
	if model == "" {
		return nil
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, res.Body, 1<<20)).Decode(&list); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	for _, m := range list.Data {
		if m.ID == model {
			return nil
		}
	}
	return fmt.Errorf("GET %s does not list %q", url, model)
}

// Cleanup stops every recorded process that is still the one started (SIGTERM to its group,
// SIGKILL after StopGrace) and drops it from the record; a process that does not go away stays
// recorded and fails the cleanup, for a retry.
func (l *Local) Cleanup(ctx context.Context, d *Deployment) error {
	grace := l.StopGrace
	if grace == 0 {
		grace = 10 * time.Second
	}
	if l.TargetsDir != "" {
		if err := promtargets.Remove(l.TargetsDir, d.ExecutionID); err != nil {
			return err
		}
	}
	// A deployer killed between starting a child and saving the record leaves a process no
	// record names; each child carries LENS_DEPLOYMENT in its environment, so it is found too.
	d.Processes = append(d.Processes, unrecorded(d)...)
	var wg sync.WaitGroup
	stuck := make([]bool, len(d.Processes))
	for i, p := range d.Processes {
		wg.Go(func() { stuck[i] = !l.stop(ctx, p, grace) })
	}
	wg.Wait()
	var left []Process
	for i, p := range d.Processes {
		if stuck[i] {
			left = append(left, p)
		}
	}
	d.Processes = left
	if len(left) > 0 {
		return fmt.Errorf("%d process(es) of deployment %s did not stop (first: pid %d)", len(left), d.ExecutionID, left[0].PID)
	}
	return nil
}

// unrecorded lists the live processes started for d (LENS_DEPLOYMENT=d's id in their
// environment) that its record does not hold.
func unrecorded(d *Deployment) []Process {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	marker := []byte("LENS_DEPLOYMENT=" + d.ExecutionID + "\x00")
	var found []Process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || slices.ContainsFunc(d.Processes, func(p Process) bool { return p.PID == pid }) {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(append([]byte{0}, env...), append([]byte{0}, marker...)) {
			continue
		}
		if ticks, err := startTicks(pid); err == nil {
			found = append(found, Process{Role: "unrecorded", PID: pid, StartTicks: ticks})
		}
	}
	return found
}

// stop ends p; it reports whether p is gone.
func (l *Local) stop(ctx context.Context, p Process, grace time.Duration) bool {
	if !alive(p) {
		return true
	}
	_ = syscall.Kill(-p.PID, syscall.SIGTERM) // the process group: the child and anything it forked
	if l.waitGone(ctx, p, grace) {
		return true
	}
	if !alive(p) {
		return true
	}
	_ = syscall.Kill(-p.PID, syscall.SIGKILL)
	return l.waitGone(ctx, p, 5*time.Second)
}

func (l *Local) waitGone(ctx context.Context, p Process, within time.Duration) bool {
	l.mu.Lock()
	done := l.children[p.PID]
	l.mu.Unlock()
	timer := time.NewTimer(within)
	defer timer.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if done != nil {
			select {
			case <-done:
				return true
			default:
			}
		} else if !alive(p) {
			return true
		}
		select {
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

// alive says whether p's pid still runs the process that was started (same start time, not a
// zombie).
func alive(p Process) bool {
	ticks, err := startTicks(p.PID)
	return err == nil && (p.StartTicks == 0 || ticks == p.StartTicks)
}

// startTicks reads a process's start time (clock ticks since boot, field 22 of
// /proc/<pid>/stat); a zombie counts as gone.
func startTicks(pid int) (uint64, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces and parentheses: fields count from the last ')'.
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("unreadable stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, errors.New("short stat")
	}
	if f[0] == "Z" || f[0] == "X" {
		return 0, errors.New("exited")
	}
	return strconv.ParseUint(f[19], 10, 64)
}
