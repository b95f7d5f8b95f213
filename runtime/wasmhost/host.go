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
	"syscall"
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
	// Async makes New return before the modules are compiled: they compile in the
	// background, Status reports each one's state, a lookup of one still compiling fails
	// with a CompilingError, and Wait waits for one. Load failures are then per module.
	Async bool
	// BeforeLoad, when set, is called as each module's load (its compilation, on a cold
	// cache) begins, with a context Close cancels: tests block it to hold a module in
	// StateCompiling, as a slow first compilation does.
	BeforeLoad func(ctx context.Context, name string)
	// PendingPoll is how often a host with pending modules (a manifest's "pending": a build
	// still under way) re-reads the manifest when nothing looks one up; default 1 s. A
	// lookup of a pending module re-reads it at once.
	PendingPoll time.Duration
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
	modules  map[string]*module      // by name
	extra    map[string]*module      // user calculators loaded by path, by sha256
	calcs    []*module               // configured calculator pools
	states   map[string]*moduleState // every configured module, by name, from New on
	closed   bool

	loadCtx    context.Context // the background loads'; Close cancels it
	cancelLoad context.CancelFunc
	loading    sync.WaitGroup
	loadErrs   []error // the background loads' failures, under mu

	// Pending modules: refreshMu serializes re-reading the manifests that list them;
	// manifests is what each such directory's manifest was when last read; watching says
	// the watcher (a loading member) still runs, so a refresh may start loads.
	refreshMu sync.Mutex
	manifests map[string]os.FileInfo
	watching  bool
}

// New loads, verifies and compiles every module in cfg.BuiltinDir and cfg.ModuleDirs, and
// starts one instance of each to check its ABI version, exports and descriptor. Without
// cfg.Async any problem fails the whole load; with it New returns once the manifests and
// checksums are read and the modules compile in the background (see Status).
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
	if cfg.PendingPoll <= 0 {
		cfg.PendingPoll = time.Second
	}
	h := &Host{cfg: cfg, modules: map[string]*module{}, extra: map[string]*module{}, states: map[string]*moduleState{},
		manifests: map[string]os.FileInfo{}}
	h.loadCtx, h.cancelLoad = context.WithCancel(context.WithoutCancel(ctx))
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
	where := map[string]string{}
	building := 0
	for i, dir := range dirs {
		// Stat before reading: a manifest replaced after the stat is seen as changed later.
		seen, _ := os.Stat(filepath.Join(dir, ManifestFile))
		m, err := ReadManifest(dir)
		if err != nil {
			h.Close(ctx)
			return nil, fmt.Errorf("module directory %s: %w", dir, err)
		}
		builtin := cfg.BuiltinDir != "" && i == 0
		for _, p := range m.Pending {
			path := filepath.Join(dir, ManifestFile) + " (pending)"
			if prev, ok := where[p.Name]; ok {
				h.Close(ctx)
				return nil, fmt.Errorf("module name %q is used by both %s and %s", p.Name, prev, path)
			}
			where[p.Name] = path
			st := &moduleState{kind: p.Kind, done: make(chan struct{}), building: true, dir: dir, builtin: builtin}
			h.states[p.Name] = st
			if p.Error != "" {
				st.building, st.err = false, buildFailed(p)
				close(st.done)
				continue
			}
			building++
			h.manifests[dir] = seen
			h.logf("WASM module %s is being built (pending in %s); what needs it answers 503 until it is built and compiled", p.Name, dir)
		}
		for _, e := range m.Modules {
			path := filepath.Join(dir, e.File)
			// A module must describe itself as its manifest names it, so the manifest's names
			// are the modules' names before anything is compiled.
			if prev, ok := where[e.Name]; ok {
				h.Close(ctx)
				return nil, fmt.Errorf("module name %q is used by both %s and %s", e.Name, prev, path)
			}
			where[e.Name] = path
			jobs = append(jobs, job{dir, e, builtin})
			h.states[e.Name] = &moduleState{kind: e.Kind, done: make(chan struct{})}
		}
	}
	if building > 0 && !cfg.Async {
		h.Close(ctx)
		return nil, fmt.Errorf("%d WASM module(s) are still being built (a manifest's pending list) and this host does not load in the background", building)
	}
	// Compile in parallel: even from a warm cache, loading is dominated by per-module work.
	started := time.Now()
	for _, j := range jobs {
		// A warm cache loads a module in milliseconds (no compilation): it is ready when New
		// returns, so a warm start has nothing in the background. A module with a load hook
		// always loads in the background, as on a cold cache.
		if cfg.Async && cfg.BeforeLoad == nil && !errors.Is(h.loadInto(j.dir, j.entry, j.builtin, true), errNotVerified) {
			continue // ready, or failed (a checksum): recorded either way
		}
		h.startLoad(j.dir, j.entry, j.builtin)
	}
	if building > 0 {
		h.watching = true
		h.loading.Add(1)
		go h.watchPending()
	}
	if cfg.Async {
		go func() {
			h.loading.Wait()
			h.mu.Lock()
			err := errors.Join(h.loadErrs...)
			h.mu.Unlock()
			if err != nil {
				h.logf("WASM modules: some failed to load (their routes answer with the cause): %v", err)
			} else if d := time.Since(started); d > time.Second {
				h.logf("WASM modules ready in %.1fs", d.Seconds())
			}
		}()
		return h, nil
	}
	h.loading.Wait()
	if err := errors.Join(h.loadErrs...); err != nil {
		h.Close(ctx)
		return nil, err
	}
	return h, nil
}

// startLoad loads one manifest entry in the background (a loading member).
func (h *Host) startLoad(dir string, e ManifestEntry, builtin bool) {
	h.loading.Add(1)
	go func() {
		defer h.loading.Done()
		if err := h.loadInto(dir, e, builtin, false); err != nil {
			h.mu.Lock()
			h.loadErrs = append(h.loadErrs, err)
			h.mu.Unlock()
		}
	}()
}

// buildFailed is the error of a pending module whose build failed.
func buildFailed(p PendingEntry) error {
	return fmt.Errorf("building WASM module %s failed: %s", p.Name, p.Error)
}

// watchPending re-reads the manifests listing pending modules every PendingPoll until none
// is pending or the host closes.
func (h *Host) watchPending() {
	defer h.loading.Done()
	tick := time.NewTicker(h.cfg.PendingPoll)
	defer tick.Stop()
	for {
		select {
		case <-h.loadCtx.Done():
		case <-tick.C:
			if h.refreshPending() {
				continue
			}
		}
		h.refreshMu.Lock()
		h.watching = false
		h.refreshMu.Unlock()
		return
	}
}

// refreshPending re-reads each manifest that lists a pending module and has changed since
// it was read (another file, size or modification time): a module now listed under "modules" is
// loaded from it (its sha256 checked against the new manifest, as every module is; a file
// that does not match is refused); one whose pending entry now carries an error, or that
// the manifest no longer names, fails with the reason. It reports whether some module is
// still pending. A manifest that cannot be read (never so while build.sh renames it into
// place) is tried again next time. Changes to modules already loaded are not taken: the
// host runs the files it verified.
func (h *Host) refreshPending() bool {
	h.refreshMu.Lock()
	defer h.refreshMu.Unlock()
	if !h.watching || h.loadCtx.Err() != nil {
		return false
	}
	for dir, last := range h.manifests {
		path := filepath.Join(dir, ManifestFile)
		now, err := os.Stat(path)
		if err != nil || (last != nil && os.SameFile(last, now) && now.ModTime().Equal(last.ModTime()) && now.Size() == last.Size()) {
			continue
		}
		m, err := ReadManifest(dir)
		if err != nil {
			h.logf("WASM modules: re-reading %s for a pending module: %v", path, err)
			continue
		}
		h.manifests[dir] = now
		h.takeManifest(dir, m)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for dir := range h.manifests {
		still := false
		for _, st := range h.states {
			if st.building && st.dir == dir {
				still = true
			}
		}
		if !still {
			delete(h.manifests, dir)
		}
	}
	return len(h.manifests) > 0
}

// takeManifest moves the pending modules of dir on by its manifest m (refreshMu held).
func (h *Host) takeManifest(dir string, m Manifest) {
	listed := map[string]ManifestEntry{}
	for _, e := range m.Modules {
		listed[e.Name] = e
	}
	pending := map[string]PendingEntry{}
	for _, p := range m.Pending {
		pending[p.Name] = p
	}
	h.mu.Lock()
	var arrived []string
	for name, st := range h.states {
		if !st.building || st.dir != dir {
			continue
		}
		if e, ok := listed[name]; ok && e.Kind == st.kind {
			st.building = false
			arrived = append(arrived, name)
			continue
		}
		p, ok := pending[name]
		switch {
		case ok && p.Kind == st.kind && p.Error == "":
			continue // still being built
		case ok && p.Kind == st.kind:
			st.err = buildFailed(p)
		default:
			st.err = fmt.Errorf("WASM module %s was pending in %s, which no longer lists it as a %s", name, filepath.Join(dir, ManifestFile), st.kind)
		}
		st.building = false
		close(st.done)
		h.logf("%v", st.err)
	}
	builtin := map[string]bool{}
	for _, name := range arrived {
		builtin[name] = h.states[name].builtin
	}
	h.mu.Unlock()
	sort.Strings(arrived)
	for _, name := range arrived {
		e := listed[name]
		h.logf("WASM module %s is built (%s)", name, filepath.Join(dir, e.File))
		// A module verified before (a warm cache) is ready at once, as in New; one that fails
		// its checksum is failed at once.
		if !errors.Is(h.loadInto(dir, e, builtin[name], true), errNotVerified) {
			continue
		}
		h.startLoad(dir, e, builtin[name])
	}
}

// ModuleState is where a configured module is in its loading.
type ModuleState string

// The states of a module: it is being built (pending in its manifest: a build still under
// way), compiling (a cold cache: seconds), ready to use, or failed to load (its error says
// why).
const (
	StateBuilding  ModuleState = "building"
	StateCompiling ModuleState = "compiling"
	StateReady     ModuleState = "ready"
	StateFailed    ModuleState = "failed"
)

// ModuleStatus is one configured module's loading state.
type ModuleStatus struct {
	Name  string      `json:"name"`
	Kind  string      `json:"kind"`
	State ModuleState `json:"state"`
	Error string      `json:"error,omitempty"`
}

// ErrCompiling is what a lookup of a module that is still compiling wraps; Wait waits for it.
var ErrCompiling = errors.New("WASM module still compiling")

// CompilingError says which module a caller needs is still compiling, or still being built
// (Building: the module is pending in its manifest).
type CompilingError struct {
	Module   string
	Building bool
}

func (e *CompilingError) Error() string {
	verb := "compiling"
	if e.Building {
		verb = "building"
	}
	return verb + " WASM module " + e.Module + ", first start only; try again shortly"
}

// Is makes errors.Is(err, ErrCompiling) hold.
func (e *CompilingError) Is(target error) bool { return target == ErrCompiling }

// moduleState tracks one configured module until it is loaded: done is closed when it is
// ready (its module in Host.modules) or failed (err). A pending module is building until its
// manifest (in dir) lists it; builtin is the runtime it then loads into.
type moduleState struct {
	kind     string
	done     chan struct{}
	err      error
	building bool
	dir      string
	builtin  bool
}

// errNotVerified: the module has to be compiled and checked (a cold cache).
var errNotVerified = errors.New("module not verified before")

// loadInto loads one manifest entry and records the outcome in its state.
func (h *Host) loadInto(dir string, e ManifestEntry, builtin, verifiedOnly bool) error {
	m, err := h.load(h.loadCtx, filepath.Join(dir, e.File), e, builtin, verifiedOnly)
	if errors.Is(err, errNotVerified) {
		return err // still compiling: the background load records it
	}
	h.mu.Lock()
	st := h.states[e.Name]
	if err == nil && h.closed {
		err = ErrClosed
	}
	if err != nil {
		st.err = err
	} else {
		h.modules[e.Name] = m
	}
	close(st.done)
	h.mu.Unlock()
	if err != nil && m != nil {
		m.close(context.Background())
	}
	if err != nil && h.cfg.Async && !errors.Is(err, ErrClosed) {
		h.logf("WASM module %s failed to load: %v", e.Name, err)
	}
	return err
}

func (h *Host) logf(format string, args ...any) {
	if h.cfg.Log != nil {
		h.cfg.Log(format, args...)
	}
}

// Status lists every configured module with its state, sorted by name.
func (h *Host) Status() []ModuleStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]ModuleStatus, 0, len(h.states))
	for name, st := range h.states {
		s := ModuleStatus{Name: name, Kind: st.kind, State: StateReady}
		select {
		case <-st.done:
			if st.err != nil {
				s.State, s.Error = StateFailed, st.err.Error()
			}
		default:
			s.State = StateCompiling
			if st.building {
				s.State = StateBuilding
			}
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Compiling names the modules still compiling, sorted.
func (h *Host) Compiling() []string {
	var out []string
	for _, s := range h.Status() {
		if s.State == StateCompiling {
			out = append(out, s.Name)
		}
	}
	return out
}

// Wait blocks while the module name is compiling (an event stage that needs it waits instead
// of failing). It returns ctx's error if ctx ends first, and nil for a name the host does not
// configure (the lookup that follows says so).
func (h *Host) Wait(ctx context.Context, name string) error {
	h.mu.Lock()
	st := h.states[name]
	h.mu.Unlock()
	if st == nil {
		return nil
	}
	select {
	case <-st.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// load verifies one module file against its manifest entry. A module whose descriptor was
// verified before (same sha256, same ABI version; remembered in CacheDir) is compiled
// lazily on first use, which keeps a warm start fast; any other module is compiled and
// checked now, so a bad module fails the load.
//
// With verifiedOnly it only takes the quick path: a module not verified before is
// errNotVerified.
func (h *Host) load(ctx context.Context, path string, e ManifestEntry, builtin, verifiedOnly bool) (*module, error) {
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
	if h.cfg.BeforeLoad != nil {
		h.cfg.BeforeLoad(ctx, e.Name)
	}
	if d, ok := h.verifiedDescriptor(sum, e); ok {
		m.setDescriptor(d)
		return m, nil
	}
	if verifiedOnly {
		return nil, errNotVerified
	}
	// Functions sharing a cache compile a module once between them: the first holds the
	// module's lock while it compiles; the others then find it verified.
	unlock := h.lockModule(sum)
	defer unlock()
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

// lockModule takes the cache's lock on one module (an flock, so it is released if the
// process dies); without a cache, or if the lock cannot be taken, it does nothing and
// the module is just compiled here too.
func (h *Host) lockModule(sum string) (unlock func()) {
	path := h.descriptorPath(sum)
	if path == "" || os.MkdirAll(filepath.Dir(path), 0o755) != nil {
		return func() {}
	}
	f, err := os.OpenFile(CompileLockPath(h.cfg.CacheDir, sum), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return func() {}
	}
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX) != nil {
		f.Close()
		return func() {}
	}
	return func() { f.Close() } // closing the file releases the lock
}

// descriptorPath is where a verified descriptor is remembered: keyed by the module's
// sha256 and the host's ABI version, beside wazero's compilation cache (which must be
// guarded the same way).
func (h *Host) descriptorPath(sum string) string {
	if h.cfg.CacheDir == "" {
		return ""
	}
	return descriptorFile(h.cfg.CacheDir, sum)
}

func descriptorFile(cacheDir, sum string) string {
	return filepath.Join(cacheDir, "lensfn-descriptors", fmt.Sprintf("%s.abi%d.json", sum, abi.Version))
}

// DescriptorFile is where a host remembers, in cacheDir, that the module with sha256 sum was
// verified (a warm cache: it is not compiled at load).
func DescriptorFile(cacheDir, sum string) string { return descriptorFile(cacheDir, sum) }

// CompileLockPath is the file whose flock a host holds while it compiles the module with
// sha256 sum into cacheDir: hosts sharing a cache (the functions of one machine) compile
// each module once between them.
func CompileLockPath(cacheDir, sum string) string { return descriptorFile(cacheDir, sum) + ".lock" }

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
	h.mu.Unlock()
	// Background loads end first (a cancelled compile hook returns; a compile in progress
	// finishes) and close what they loaded: the runtimes must not close under them.
	h.cancelLoad()
	h.loading.Wait()
	h.mu.Lock()
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
	st := h.states[name]
	building := st != nil && st.building
	h.mu.Unlock()
	if building {
		// The build may have finished since the watcher last looked: look now.
		h.refreshPending()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	m := h.modules[name]
	if st := h.states[name]; m == nil && st != nil && st.kind == kind {
		select {
		case <-st.done:
			return nil, fmt.Errorf("WASM module %s failed to load: %w", name, st.err)
		default:
			return nil, &CompilingError{Module: name, Building: st.building}
		}
	}
	if m == nil || m.info.Kind != kind {
		return nil, fmt.Errorf("%w: no %s named %q", ErrUnknownModule, kind, name)
	}
	return m, nil
}

// Warming names each module still being built or compiling ("building WASM module NAME",
// "compiling WASM module NAME"), for a function's readiness (fn.Function.Warming).
func (h *Host) Warming() []string {
	var out []string
	for _, s := range h.Status() {
		if s.State == StateCompiling || s.State == StateBuilding {
			out = append(out, string(s.State)+" WASM module "+s.Name)
		}
	}
	return out
}
