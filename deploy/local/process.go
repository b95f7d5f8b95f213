package local

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lensfn/lensfn/runtime/fn"
)

// process supervises one function: it starts the binary, restarts it with backoff when it
// exits, and stops it with SIGTERM so the function drains.
type process struct {
	name, bin, readiness, logPath string
	args                          []string
	env                           map[string]string
	port                          int
	// movable: the port was any free one, so after a run that lost it to another process
	// (bind: address already in use) the next run gets a new one; onMove hears of it.
	movable bool
	onMove  func(port int)
	// runLogStart is where the current run's output begins in the log (the log is appended).
	runLogStart int64
	log         func(string, ...any)

	mu       sync.Mutex
	cmd      *exec.Cmd
	stopping bool
	alive    bool // between a successful start and the exit of the current run
	restarts int
	exited   chan struct{} // closed when the supervisor loop ends
}

func (p *process) url() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return "http://127.0.0.1:" + strconv.Itoa(p.port)
}

// lostItsPort says whether the last run failed because another process held its port: a free
// port is picked by closing a probe listener, so anything on the machine can take it before the
// function binds it, and a restart on the same port would fail for as long as that holder lives.
func (p *process) lostItsPort() bool {
	f, err := os.Open(p.logPath)
	if err != nil {
		return false
	}
	defer f.Close()
	// Only the last run's own output counts: an earlier run's bind failure is not this one's.
	const tail = 4 << 10
	from := p.runLogStart
	if st, err := f.Stat(); err == nil && st.Size()-tail > from {
		from = st.Size() - tail
	}
	_, _ = f.Seek(from, io.SeekStart)
	b, _ := io.ReadAll(io.LimitReader(f, tail))
	return strings.Contains(string(b), "address already in use")
}

// moveIfItLostItsPort gives a movable process a new free port when its last run lost its own.
func (p *process) moveIfItLostItsPort() {
	if !p.movable || !p.lostItsPort() {
		return
	}
	port, err := freePort()
	if err != nil {
		return
	}
	p.mu.Lock()
	old := p.port
	p.port, p.env["PORT"] = port, strconv.Itoa(port)
	p.mu.Unlock()
	p.log("%s: port %d was taken by another process; moving to %d", p.name, old, port)
	if p.onMove != nil {
		p.onMove(port)
	}
}

func (p *process) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

func (p *process) environ() []string {
	keys := make([]string, 0, len(p.env))
	for k := range p.env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for _, k := range keys {
		out = append(out, k+"="+p.env[k])
	}
	return out
}

// supervise runs the process until stop, restarting it after a crash with a backoff that doubles
// from 250ms to 10s and resets once a run has lasted 30s.
func (p *process) supervise() {
	p.exited = make(chan struct{})
	go func() {
		defer close(p.exited)
		backoff := 250 * time.Millisecond
		for {
			started := time.Now()
			err := p.runOnce()
			p.mu.Lock()
			stopping := p.stopping
			p.mu.Unlock()
			if stopping {
				return
			}
			if time.Since(started) > 30*time.Second {
				backoff = 250 * time.Millisecond
			}
			p.log("%s exited (%v); restarting in %s", p.name, err, backoff)
			p.moveIfItLostItsPort()
			time.Sleep(backoff)
			backoff = min(2*backoff, 10*time.Second)
			p.mu.Lock()
			p.restarts++
			stopping = p.stopping
			p.mu.Unlock()
			if stopping {
				return
			}
		}
	}()
}

func (p *process) runOnce() error {
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	if st, err := logFile.Stat(); err == nil {
		p.runLogStart = st.Size()
	}
	cmd := exec.Command(p.bin, p.args...)
	p.mu.Lock()
	cmd.Env = p.environ()
	p.mu.Unlock()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	p.mu.Lock()
	if p.stopping {
		p.mu.Unlock()
		return errStopped
	}
	if err := cmd.Start(); err != nil {
		p.mu.Unlock()
		return err
	}
	p.cmd, p.alive = cmd, true
	p.mu.Unlock()
	err = cmd.Wait()
	p.mu.Lock()
	p.alive = false
	p.mu.Unlock()
	return err
}

// running says whether the process is up (false while it restarts).
func (p *process) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.alive
}

func (p *process) waitReady(ctx context.Context, deadline time.Time) error {
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := client.Get(p.url() + p.readiness)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is not ready at %s%s (log: %s)", p.name, p.url(), p.readiness, p.logPath)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// warming is the start-up work the function's /readyz lists (its fn.WarmingPrefix lines);
// nil when it lists none or does not answer.
func (p *process) warming(ctx context.Context) []string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url()+p.readiness, nil)
	if err != nil {
		return nil
	}
	resp, err := readinessClient.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var out []string
	for _, line := range strings.Split(string(body), "\n") {
		if item, ok := strings.CutPrefix(line, fn.WarmingPrefix); ok {
			out = append(out, item)
		}
	}
	return out
}

var readinessClient = &http.Client{Timeout: 2 * time.Second}

func (p *process) stop(grace time.Duration) {
	p.mu.Lock()
	p.stopping = true
	cmd := p.cmd
	p.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-p.exited:
	case <-time.After(grace):
		if cmd != nil && cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
		<-p.exited
	}
}
