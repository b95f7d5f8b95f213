package wasmhost_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/wasmhost"
	"github.com/lensfn/lensfn/runtime/wasmhost/wasmtest"
	"github.com/lensfn/lensfn/wasm-modules/latency"
)

func newHost(t *testing.T, cfg wasmhost.Config) *wasmhost.Host {
	t.Helper()
	if cfg.CacheDir == "" {
		cfg.CacheDir = wasmtest.CacheDir(t)
	}
	h, err := wasmhost.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Many goroutines share a pool of two instances; run with -race to check that an instance
// is never used by two goroutines at once.
func TestPoolHammer(t *testing.T) {
	h := newHost(t, wasmhost.Config{BuiltinDir: wasmtest.BuiltinDir(t), PoolSize: 2})
	p, err := h.Parser("mooncake_trace")
	if err != nil {
		t.Fatal(err)
	}
	var lines strings.Builder
	for i := 0; i < 500; i++ {
		lines.WriteString(`{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}` + "\n")
	}
	good := writeFile(t, "good.jsonl", lines.String())
	bad := writeFile(t, "bad.jsonl", lines.String()+`{"timestamp": 1}`+"\n")
	calc, err := h.Calculator("constant", []byte(`{"time-to-first-token":"10ms","time-to-first-token-std-dev":"2ms","inter-token-latency":"1ms"}`))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var gaps []time.Duration
			for i := 0; i < 10; i++ {
				src := good
				if (g+i)%3 == 0 {
					src = bad
				}
				n := 0
				_, err := p.Parse(context.Background(), wasmhost.Source{Path: src}, wasmhost.ParseOptions{}, func(*wasmhost.TraceRequest) error { n++; return nil })
				switch {
				case src == good && (err != nil || n != 500):
					errs <- err
				case src == bad && (err == nil || !strings.Contains(err.Error(), "line 501")):
					errs <- errors.New("bad input not reported: " + errString(err))
				}
				for j := 0; j < 50; j++ {
					ttft, g2, err := calc.Schedule(latency.Input{OutputTokens: 4, Rand: uint64(j)}, gaps)
					if err != nil || ttft < 3*time.Millisecond || ttft > 17*time.Millisecond || len(g2) != 3 {
						errs <- errors.New("schedule: " + errString(err))
						return
					}
					gaps = g2
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func TestParseSourceErrors(t *testing.T) {
	h := newHost(t, wasmhost.Config{BuiltinDir: wasmtest.BuiltinDir(t)})
	p, _ := h.Parser("mooncake_trace")
	emit := func(*wasmhost.TraceRequest) error { return nil }
	if _, err := p.Parse(context.Background(), wasmhost.Source{Path: filepath.Join(t.TempDir(), "missing.jsonl")}, wasmhost.ParseOptions{}, emit); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := p.Parse(context.Background(), wasmhost.Source{Path: t.TempDir()}, wasmhost.ParseOptions{}, emit); err == nil || !strings.Contains(err.Error(), "directory has no files") {
		t.Errorf("empty directory: %v", err)
	}
	// The caller's emit error stops the parse and comes back unchanged inside the chain.
	stop := errors.New("enough")
	src := writeFile(t, "t.jsonl", "{\"input_length\": 1}\n{\"input_length\": 2}\n")
	if _, err := p.Parse(context.Background(), wasmhost.Source{Path: src}, wasmhost.ParseOptions{}, func(*wasmhost.TraceRequest) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("emit error: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Parse(ctx, wasmhost.Source{Path: src}, wasmhost.ParseOptions{}, emit); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
}

func TestManifestErrors(t *testing.T) {
	cases := map[string]string{
		"not json":    `{`,
		"version":     `{"manifest_version":2,"modules":[]}`,
		"path":        `{"manifest_version":1,"modules":[{"file":"../x.wasm","sha256":"` + strings.Repeat("0", 64) + `","kind":"trace-parser","name":"x"}]}`,
		"short sum":   `{"manifest_version":1,"modules":[{"file":"x.wasm","sha256":"abc","kind":"trace-parser","name":"x"}]}`,
		"unknown key": `{"manifest_version":1,"modules":[],"extra":1}`,
		"bad kind":    `{"manifest_version":1,"modules":[{"file":"x.wasm","sha256":"` + strings.Repeat("0", 64) + `","kind":"filter","name":"x"}]}`,
	}
	for name, manifest := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "x.wasm"), []byte("\x00asm"), 0o644)
			os.WriteFile(filepath.Join(dir, wasmhost.ManifestFile), []byte(manifest), 0o644)
			if h, err := wasmhost.New(context.Background(), wasmhost.Config{ModuleDirs: []string{dir}}); err == nil {
				h.Close(context.Background())
				t.Fatal("accepted")
			}
		})
	}
	if _, err := wasmhost.New(context.Background(), wasmhost.Config{ModuleDirs: []string{t.TempDir()}}); err == nil || !strings.Contains(err.Error(), "manifest.json") {
		t.Fatalf("directory without manifest: %v", err)
	}
}

func TestUserCalculatorByPath(t *testing.T) {
	// A copy of the constant calculator in its own directory is a user module.
	mine := wasmtest.UserCopy(t, "constant", "mine.wasm")
	h := newHost(t, wasmhost.Config{CallTimeout: time.Second})
	calc, err := h.Calculator(mine, []byte(`{"time-to-first-token":"7ms","inter-token-latency":"1ms"}`))
	if err != nil {
		t.Fatal(err)
	}
	if calc.Info().Builtin {
		t.Fatal("a calculator loaded by path must run as a user module")
	}
	ttft, gaps, err := calc.Schedule(latency.Input{OutputTokens: 3}, nil)
	if err != nil || ttft != 7*time.Millisecond || len(gaps) != 2 || gaps[1] != time.Millisecond {
		t.Fatalf("schedule %v %v %v", ttft, gaps, err)
	}
	if _, err := h.Calculator(filepath.Join(t.TempDir(), "none.wasm"), nil); err == nil || !strings.Contains(err.Error(), "manifest") {
		t.Fatalf("path without manifest: %v", err)
	}
	if _, _, err := calc.Schedule(latency.Input{OutputTokens: -1}, nil); err == nil {
		t.Fatal("negative output tokens accepted")
	}
	calc.Close()
	if _, _, err := calc.Schedule(latency.Input{OutputTokens: 1}, nil); !errors.Is(err, wasmhost.ErrClosed) {
		t.Fatalf("schedule after Close: %v", err)
	}
}

func TestClosedHost(t *testing.T) {
	h, err := wasmhost.New(context.Background(), wasmhost.Config{BuiltinDir: wasmtest.BuiltinDir(t), CacheDir: wasmtest.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Parser("mooncake_trace"); !errors.Is(err, wasmhost.ErrClosed) {
		t.Fatalf("parser after close: %v", err)
	}
}
