package conformance_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/wasmhost"
	"github.com/lensfn/lensfn/runtime/wasmhost/wasmtest"
	"github.com/lensfn/lensfn/tests/tracefixture"
	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt"
)

// shared finds the real traces; the cases that need them skip without, and TestMain
// prints one line naming them.
var shared tracefixture.Shared

func TestMain(m *testing.M) { shared.Main(m, "tests/conformance") }

// sharedTraces is the real traces directory, or a recorded skip.
func sharedTraces(tb testing.TB) string {
	tb.Helper()
	return shared.Traces(tb, wasmtest.RepoRoot(tb))
}

func newHost(tb testing.TB, cfg wasmhost.Config) *wasmhost.Host {
	tb.Helper()
	if cfg.CacheDir == "" {
		cfg.CacheDir = wasmtest.CacheDir(tb)
	}
	h, err := wasmhost.New(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { h.Close(context.Background()) })
	return h
}

// builtinHost loads every built-in module and, when wat2wasm is present, the example.
func builtinHost(tb testing.TB) *wasmhost.Host {
	return newHost(tb, wasmhost.Config{BuiltinDir: wasmtest.BuiltinDir(tb)})
}

// encoded runs emit-style parsing and returns each record's ABI encoding, which is what
// "identical output" means here (Source is host-side and not encoded).
func nativeRecords(tb testing.TB, p tracefmt.Parser, path string) [][]byte {
	tb.Helper()
	var out [][]byte
	if err := tracefmt.ParseFile(p, path, 64<<10, func(r *abi.TraceRequest) error {
		out = append(out, abi.AppendRecord(nil, r))
		return nil
	}); err != nil {
		tb.Fatalf("native core on %s: %v", path, err)
	}
	return out
}

func guestRecords(tb testing.TB, h *wasmhost.Host, format, path string) [][]byte {
	tb.Helper()
	p, err := h.Parser(format)
	if err != nil {
		tb.Fatal(err)
	}
	var out [][]byte
	if err := p.ParseRaw(context.Background(), path, func(r *abi.TraceRequest) error {
		out = append(out, abi.AppendRecord(nil, r))
		return nil
	}); err != nil {
		tb.Fatalf("%s module on %s: %v", format, path, err)
	}
	return out
}

// watModule is a test-only parser written in WebAssembly text; body replaces the
// default behaviour of the named exports.
type watModule struct {
	name       string
	abiVersion int
	feedBody   string // body of lens_parse_feed, returning i64
	omitEnd    bool
}

func (m watModule) source() string {
	desc := fmt.Sprintf(`{"abi_version":%d,"kind":"trace-parser","name":"%s","version":"0.0.1"}`, m.abiVersion, m.name)
	feed := m.feedBody
	if feed == "" {
		feed = "(i64.const 0)"
	}
	end := `(func (export "lens_parse_end") (result i64) (i64.const 0))`
	if m.omitEnd {
		end = ""
	}
	return fmt.Sprintf(`(module
  (memory (export "memory") 2)
  (data (i32.const 16) %q)
  (func (export "lens_abi_version") (result i32) (i32.const %d))
  (func (export "lens_describe") (result i64) (i64.or (i64.shl (i64.const 16) (i64.const 32)) (i64.const %d)))
  (func (export "lens_error") (result i64) (i64.const 0))
  (func (export "lens_buffer") (param i32) (result i32) (i32.const 65536))
  (func (export "lens_parse_begin") (param i32 i32) (result i64) (i64.const 0))
  (func (export "lens_parse_feed") (param i32 i32) (result i64) %s)
  %s)`, desc, m.abiVersion, len(desc), feed, end)
}

// userModuleDir builds the modules with wat2wasm into a fresh directory with a manifest.
func userModuleDir(tb testing.TB, mods ...watModule) string {
	tb.Helper()
	files := make([]watFile, len(mods))
	for i, m := range mods {
		files[i] = watFile{name: m.name, kind: abi.KindTraceParser, source: m.source()}
	}
	return watModuleDir(tb, files...)
}

// watFile is a test module in WebAssembly text with the kind its manifest entry gives it.
type watFile struct {
	name, kind, source string
}

// watModuleDir builds the modules with wat2wasm into a fresh directory with a manifest.
func watModuleDir(tb testing.TB, mods ...watFile) string {
	tb.Helper()
	if _, err := exec.LookPath("wat2wasm"); err != nil {
		tb.Skip("wat2wasm not found: install Debian's wabt to build the test modules")
	}
	dir := tb.TempDir()
	var entries []string
	for _, m := range mods {
		wat := filepath.Join(dir, m.name+".wat")
		wasm := filepath.Join(dir, m.name+".wasm")
		if err := os.WriteFile(wat, []byte(m.source), 0o644); err != nil {
			tb.Fatal(err)
		}
		if out, err := exec.Command("wat2wasm", wat, "-o", wasm).CombinedOutput(); err != nil {
			tb.Fatalf("wat2wasm %s: %v\n%s", m.name, err, out)
		}
		b, _ := os.ReadFile(wasm)
		sum := sha256.Sum256(b)
		entries = append(entries, fmt.Sprintf(`{"file":%q,"sha256":%q,"kind":%q,"name":%q}`,
			m.name+".wasm", hex.EncodeToString(sum[:]), m.kind, m.name))
	}
	manifest := `{"manifest_version":1,"modules":[` + strings.Join(entries, ",") + `]}`
	if err := os.WriteFile(filepath.Join(dir, wasmhost.ManifestFile), []byte(manifest), 0o644); err != nil {
		tb.Fatal(err)
	}
	return dir
}

func writeFile(tb testing.TB, name, content string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

func within(tb testing.TB, d time.Duration, f func()) {
	tb.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		tb.Fatalf("did not finish within %v", d)
	}
}
