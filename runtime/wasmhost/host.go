package wasmhost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/lensfn/lensfn/wasm-modules/abi"
)

// Config configures a Host. Zero values pick the defaults noted per field.
type Config struct {
	// CacheDir holds wazero's compilation cache; empty disables the on-disk cache
	// (every start then compiles for ~1 s per module).
	CacheDir string
	// BuiltinDir holds the built-in modules and their manifest (`make wasm` writes
	// bin/modules). They run without per-call interruption. Optional.
	BuiltinDir string
	// ModuleDirs hold user modules with manifests (LENS_MODULE_DIR). They run with
	// close-on-context-done and CallTimeout. A directory without a manifest is an error.
	ModuleDirs []string
	// PoolSize bounds the live instances per module (and per calculator); default 4.
	PoolSize int
	// MemoryLimitPages caps each instance's linear memory in 64 KiB pages; default 4096
	// (256 MiB). Go guests need about 52 pages after start.
	MemoryLimitPages uint32
	// CallTimeout bounds one call into a user module; default 10 s.
	CallTimeout time.Duration
	// Log, when set, is told about each module New has to compile and check (a cold cache:
	// seconds per module), so a first start is not silent. Modules verified before are not
	// compiled at load and not logged.
	Log func(format string, args ...any)
}

// ModuleInfo describes a loaded module.
type ModuleInfo struct {
	Kind         string          `json:"kind"` // abi.KindTraceParser or abi.KindLatencyCalculator
	Name         string          `json:"name"`
	Version      string          `json:"version"`
	ABIVersion   uint32          `json:"abi_version"`
	Description  string          `json:"description,omitempty"`
	Capabilities map[string]bool `json:"capabilities"`
	// TraceRange says what a trace range selects in the format (the descriptor's trace_range;
	// empty: the host's own rule, ParseOptions).
	TraceRange string `json:"trace_range,omitempty"`
	SHA256     string `json:"sha256"`
	Builtin    bool   `json:"builtin"`
	Path       string `json:"path"`
}

// Errors a caller can test with errors.Is.
var (
	ErrUnknownModule = errors.New("unknown module")
	ErrABIMismatch   = errors.New("module ABI version mismatch")
	ErrBadModule     = errors.New("module does not implement the Lensfn ABI")
	ErrClosed        = errors.New("wasm host closed")
)

// Host owns the wazero runtimes, the compiled modules and their instance pools.
// Its methods are safe for concurrent use.
type Host struct {
	cfg      Config
	cache    wazero.CompilationCache
	builtins wazero.Runtime // first-party modules: no interruption cost
	users    wazero.Runtime // user modules: WithCloseOnContextDone
	mu       sync.Mutex
	modules  map[string]*module // by name
	extra    map[string]*module // user calculators loaded by path, by sha256
	calcs    []*module          // configured calculator pools
	closed   bool
}

// New loads, verifies and compiles every module in cfg.BuiltinDir and cfg.ModuleDirs, and
// starts one instance of each to check its ABI version, exports and descriptor; any
// problem fails the whole load.
func New(ctx context.Context, cfg Config) (*Host, error) {
	if cfg.PoolSize <= 0 {
		cfg.PoolSize = 4
	}
	if cfg.MemoryLimitPages == 0 {
		cfg.MemoryLimitPages = 4096
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 10 * time.Second
	}
	h := &Host{cfg: cfg, modules: map[string]*module{}, extra: map[string]*module{}}
	rc := wazero.NewRuntimeConfigCompiler().WithMemoryLimitPages(cfg.MemoryLimitPages)
	if cfg.CacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasm compilation cache %s: %w", cfg.CacheDir, err)
		}
		h.cache = cache
		rc = rc.WithCompilationCache(cache)
	}
	h.builtins = wazero.NewRuntimeWithConfig(ctx, rc)
	h.users = wazero.NewRuntimeWithConfig(ctx, rc.WithCloseOnContextDone(true))
	for _, rt := range []wazero.Runtime{h.builtins, h.users} {
		if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
			h.Close(ctx)
			return nil, fmt.Errorf("wasi: %w", err)
		}
	}

	type job struct {
		dir     string
		entry   ManifestEntry
		builtin bool
	}
	var jobs []job
	dirs := append([]string{}, cfg.ModuleDirs...)
	if cfg.BuiltinDir != "" {
		dirs = append([]string{cfg.BuiltinDir}, dirs...)
	}
	for i, dir := range dirs {
		m, err := ReadManifest(dir)
		if err != nil {
			h.Close(ctx)
			return nil, fmt.Errorf("module directory %s: %w", dir, err)
		}
		for _, e := range m.Modules {
			jobs = append(jobs, job{dir, e, cfg.BuiltinDir != "" && i == 0})
		}
	}
	// Compile in parallel: even from a warm cache, loading is dominated by per-module work.
	loaded := make([]*module, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loaded[i], errs[i] = h.load(ctx, filepath.Join(j.dir, j.entry.File), j.entry, j.builtin)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, m := range loaded {
			if m != nil {
				m.close(ctx)
			}
		}
		h.Close(ctx)
		return nil, err
	}
	for _, m := range loaded {
		if prev := h.modules[m.info.Name]; prev != nil {
			h.Close(ctx)
			return nil, fmt.Errorf("module name %q is used by both %s and %s", m.info.Name, prev.info.Path, m.info.Path)
		}
		h.modules[m.info.Name] = m
	}
	return h, nil
}

// load verifies one module file against its manifest entry. A module whose descriptor was
// verified before (same sha256, same ABI version; remembered in CacheDir) is compiled
// lazily on first use, which keeps a warm start fast; any other module is compiled and
// checked now, so a bad module fails the load.
func (h *Host) load(ctx context.Context, path string, e ManifestEntry, builtin bool) (*module, error) {
	if _, ok := kindExports[e.Kind]; !ok {
		return nil, fmt.Errorf("%s: manifest kind %q is neither %q nor %q", path, e.Kind, abi.KindTraceParser, abi.KindLatencyCalculator)
	}
	bin, sum, err := readPinned(path, e.SHA256)
	if err != nil {
		return nil, err
	}
	rt := h.users
	if builtin {
		rt = h.builtins
	}
	m := &module{
		host: h, rt: rt, untrusted: !builtin, path: path, sha256: sum,
		info: ModuleInfo{Kind: e.Kind, SHA256: sum, Builtin: builtin, Path: path},
	}
	m.initPool(h.cfg.PoolSize)
	if d, ok := h.verifiedDescriptor(sum, e); ok {
		m.setDescriptor(d)
		return m, nil
	}
	started := time.Now()
	if h.cfg.Log != nil {
		h.cfg.Log("compiling WASM module %s (%s, %d KiB; first start only, cached in %s)", e.Name, e.Kind, len(bin)>>10, h.cfg.CacheDir)
	}
	m.compileWith(ctx, bin)
	d, err := m.check(ctx, e)
	if h.cfg.Log != nil && err == nil {
		h.cfg.Log("compiled WASM module %s in %.1fs", e.Name, time.Since(started).Seconds())
	}
	if err != nil {
		m.close(ctx)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	h.rememberDescriptor(sum, d)
	return m, nil
}

// descriptorPath is where a verified descriptor is remembered: keyed by the module's
// sha256 and the host's ABI version, beside wazero's compilation cache (which must be
// guarded the same way).
func (h *Host) descriptorPath(sum string) string {
	if h.cfg.CacheDir == "" {
		return ""
	}
	return filepath.Join(h.cfg.CacheDir, "lensfn-descriptors", fmt.Sprintf("%s.abi%d.json", sum, abi.Version))
}

func (h *Host) verifiedDescriptor(sum string, e ManifestEntry) (abi.Descriptor, bool) {
	path := h.descriptorPath(sum)
	if path == "" {
		return abi.Descriptor{}, false
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return abi.Descriptor{}, false
	}
	d, err := abi.ParseDescriptor(b)
	if err != nil || d.ABIVersion != abi.Version || d.Kind != e.Kind || d.Name != e.Name {
		return abi.Descriptor{}, false
	}
	return d, true
}

func (h *Host) rememberDescriptor(sum string, d abi.Descriptor) {
	path := h.descriptorPath(sum)
	if path == "" {
		return
	}
	b, err := json.Marshal(d)
	if err != nil {
		return
	}
	// Best effort: without it the next start just checks the module again.
	if os.MkdirAll(filepath.Dir(path), 0o755) == nil {
		tmp := path + ".tmp"
		if os.WriteFile(tmp, b, 0o644) == nil {
			_ = os.Rename(tmp, path)
		}
	}
}

// Close closes every instance and both runtimes.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	mods := make([]*module, 0, len(h.modules)+len(h.extra))
	for _, m := range h.modules {
		mods = append(mods, m)
	}
	for _, m := range h.extra {
		mods = append(mods, m)
	}
	mods = append(append([]*module{}, h.calcs...), mods...)
	h.mu.Unlock()
	for _, m := range mods {
		m.close(ctx)
	}
	var errs []error
	for _, rt := range []wazero.Runtime{h.builtins, h.users} {
		if rt != nil {
			errs = append(errs, rt.Close(ctx))
		}
	}
	if h.cache != nil {
		errs = append(errs, h.cache.Close(ctx))
	}
	return errors.Join(errs...)
}

// Modules lists the loaded modules, parsers first, each kind sorted by name.
func (h *Host) Modules() []ModuleInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]ModuleInfo, 0, len(h.modules))
	for _, m := range h.modules {
		info := m.info
		info.Capabilities = make(map[string]bool, len(m.info.Capabilities))
		for k, v := range m.info.Capabilities {
			info.Capabilities[k] = v
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind == abi.KindTraceParser
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func (h *Host) lookup(name, kind string) (*module, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	m := h.modules[name]
	if m == nil || m.info.Kind != kind {
		return nil, fmt.Errorf("%w: no %s named %q", ErrUnknownModule, kind, name)
	}
	return m, nil
}
