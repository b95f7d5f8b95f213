package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// make run builds the Baseten trace parser behind the first answer (parquet-go and protobuf
// are most of the WASM build's CPU): `build.sh --defer baseten_trace` lists it as pending in
// the modules' manifest, the stack starts, and ModuleBuild builds it in the background. The
// functions answer 503 for it meanwhile and load it when the manifest lists it (wasmhost).

// pendingEntry is one of the manifest's "pending" modules (wasmhost.PendingEntry's shape).
type pendingEntry struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	Error string `json:"error,omitempty"`
}

// readPending reads the manifest at path as a whole (the fields MarkPendingFailed writes back
// untouched) and its pending entries.
func readPending(path string) (map[string]json.RawMessage, []pendingEntry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var m map[string]json.RawMessage
	var pending []pendingEntry
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if raw, ok := m["pending"]; ok {
		if err := json.Unmarshal(raw, &pending); err != nil {
			return nil, nil, fmt.Errorf("%s: pending: %w", path, err)
		}
	}
	return m, pending, nil
}

// PendingModules names the modules dir's manifest lists as pending (a build still to come)
// with no error, in manifest order. A directory without a manifest has none.
func PendingModules(dir string) ([]string, error) {
	_, pending, err := readPending(filepath.Join(dir, "manifest.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range pending {
		if p.Error == "" {
			out = append(out, p.Name)
		}
	}
	return out, nil
}

// ModuleBuild is a background build of pending modules: the script (wasm-modules/build.sh)
// run as `script DIR --only NAME...` in its own process group, its output in a log file.
type ModuleBuild struct {
	Modules []string
	LogPath string
	started time.Time
	done    chan struct{}
	err     error
}

// moduleBuildStopGrace is how long a build stopped by its context has to exit after SIGTERM
// before its process group is killed.
const moduleBuildStopGrace = 3 * time.Second

// StartModuleBuild starts building modules into dir with script, logging to logPath; ctx
// ending (Ctrl-C) stops the build and everything it started. Done and Err say how it ended.
func StartModuleBuild(ctx context.Context, script, dir, logPath string, modules []string) (*ModuleBuild, error) {
	if len(modules) == 0 {
		return nil, errors.New("no modules to build")
	}
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("the modules %s are pending in %s, but their build script is not here (%v): run `make wasm`", strings.Join(modules, ", "), dir, err)
	}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := []string{dir}
	for _, m := range modules {
		args = append(args, "--only", m)
	}
	cmd := exec.Command(script, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own group, so stopping it stops the go build and compiler processes under it too;
	// SIGTERM if the stack dies without stopping it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", script, err)
	}
	b := &ModuleBuild{Modules: modules, LogPath: logPath, started: time.Now(), done: make(chan struct{})}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	go func() {
		defer close(b.done)
		defer logFile.Close()
		select {
		case err := <-exited:
			if err != nil {
				b.err = fmt.Errorf("%s %s: %w", script, strings.Join(args, " "), err)
			}
			return
		case <-ctx.Done():
		}
		pgid := cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(moduleBuildStopGrace):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-exited
		}
		// Anything of the group still left (a compiler the script did not wait for) is killed,
		// and Done waits until the group is gone (bounded: a process stuck in the kernel).
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		for deadline := time.Now().Add(moduleBuildStopGrace); syscall.Kill(-pgid, 0) == nil && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		b.err = fmt.Errorf("stopped: %w", ctx.Err())
	}()
	return b, nil
}

// Done is closed when the build has ended (and, if stopped, every process of it is gone).
func (b *ModuleBuild) Done() <-chan struct{} { return b.done }

// Err is why the build failed or stopped (nil: the modules are built); valid after Done.
func (b *ModuleBuild) Err() error {
	<-b.done
	return b.err
}

// Elapsed is how long the build has run.
func (b *ModuleBuild) Elapsed() time.Duration { return time.Since(b.started) }

// LogTail is the last n lines of the build's log (what a failure prints).
func (b *ModuleBuild) LogTail(n int) string {
	f, err := os.Open(b.LogPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	const max = 16 << 10
	if st, err := f.Stat(); err == nil && st.Size() > max {
		_, _ = f.Seek(st.Size()-max, io.SeekStart)
	}
	raw, _ := io.ReadAll(io.LimitReader(f, max))
	lines := bytes.Split(bytes.TrimRight(raw, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// MarkPendingFailed records reason as the error of each of modules the manifest in dir still
// lists as pending without one, so the functions stop waiting for a build that ended without
// saying so (killed, exited before writing the manifest, or never started) and answer with
// the failure instead. It takes build.sh's lock on dir, so it does not race a build.
func MarkPendingFailed(dir string, modules []string, reason string) error {
	lock, err := os.OpenFile(filepath.Join(dir, ".build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	path := filepath.Join(dir, "manifest.json")
	m, pending, err := readPending(path)
	if err != nil {
		return err
	}
	changed := false
	for i := range pending {
		if pending[i].Error == "" && slices.Contains(modules, pending[i].Name) {
			pending[i].Error = reason
			changed = true
		}
	}
	if !changed {
		return nil
	}
	raw, err := json.Marshal(pending)
	if err != nil {
		return err
	}
	m["pending"] = raw
	out, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(out, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path) // whole or not at all, as build.sh writes it
}
