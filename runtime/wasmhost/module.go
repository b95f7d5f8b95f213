package wasmhost

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/lensfn/lensfn/wasm-modules/abi"
)

// recycleBytes: an instance whose linear memory grew past this is closed instead of being
// pooled again (Go guests never shrink their memory).
const recycleBytes = 64 << 20

// module is one compiled module with its bounded instance pool: slots holds a token per
// live instance (at most PoolSize), idle the instances nobody is using.
type module struct {
	host      *Host
	rt        wazero.Runtime
	path      string
	sha256    string
	info      ModuleInfo
	untrusted bool
	// shared: the compiled module belongs to another module value (a calculator's pool).
	shared bool
	// configure, when set, is called once on every new instance (calculators).
	configure func(ctx context.Context, in *instance) error

	compileOnce sync.Once
	compiled    wazero.CompiledModule
	compileErr  error

	slots     chan struct{}
	idle      chan *instance
	closeOnce sync.Once
	done      chan struct{}
}

func (m *module) initPool(size int) {
	m.slots = make(chan struct{}, size)
	m.idle = make(chan *instance, size)
	m.done = make(chan struct{})
}

// instance is one instantiated module; only the goroutine that checked it out uses it.
type instance struct {
	mod     api.Module
	mem     api.Memory
	stderr  *tailBuffer
	fn      map[string]api.Function
	stack   []uint64
	bufPtr  uint32
	bufSize uint32
	// A calculator's value exports, nil when the module does not export them.
	schedule, stepTime, requestOverhead api.Function
}

// compileWith compiles the module from bin (already checked against the manifest).
func (m *module) compileWith(ctx context.Context, bin []byte) error {
	m.compileOnce.Do(func() {
		m.compiled, m.compileErr = m.rt.CompileModule(ctx, bin)
		if m.compileErr != nil {
			m.compileErr = fmt.Errorf("%s: compile: %w", m.path, m.compileErr)
		}
	})
	return m.compileErr
}

// ensureCompiled compiles a lazily loaded module on first use, re-reading the file and
// checking its sha256 again.
func (m *module) ensureCompiled() error {
	m.compileOnce.Do(func() {
		bin, _, err := readPinned(m.path, m.sha256)
		if err != nil {
			m.compileErr = err
			return
		}
		// Not the caller's ctx: a cancelled first caller must not poison the module.
		m.compiled, m.compileErr = m.rt.CompileModule(context.Background(), bin)
		if m.compileErr != nil {
			m.compileErr = fmt.Errorf("%s: compile: %w", m.path, m.compileErr)
		}
	})
	return m.compileErr
}

// get checks out an idle instance or starts a new one while fewer than PoolSize are live;
// otherwise it waits.
func (m *module) get(ctx context.Context) (*instance, error) {
	select {
	case <-m.done:
		return nil, ErrClosed
	default:
	}
	select {
	case in := <-m.idle:
		return in, nil
	default:
	}
	if err := m.ensureCompiled(); err != nil {
		return nil, err
	}
	select {
	case in := <-m.idle:
		return in, nil
	case m.slots <- struct{}{}:
		in, err := m.instantiate(ctx)
		if err != nil {
			<-m.slots
			return nil, err
		}
		return in, nil
	case <-m.done:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// put returns an instance to the pool, or discards it after a failure or heavy growth.
func (m *module) put(in *instance, failed bool) {
	if failed || in.mem.Size() > recycleBytes {
		m.discard(in)
		return
	}
	select {
	case <-m.done:
		m.discard(in)
	case m.idle <- in:
	}
}

func (m *module) discard(in *instance) {
	_ = in.mod.Close(context.Background())
	<-m.slots
}

func (m *module) close(ctx context.Context) {
	m.closeOnce.Do(func() {
		close(m.done)
		for {
			select {
			case in := <-m.idle:
				_ = in.mod.Close(ctx)
				<-m.slots
			default:
				if !m.shared && m.compiled != nil {
					_ = m.compiled.Close(ctx)
				}
				return
			}
		}
	})
}

var commonExports = []string{abi.ExportABIVersion, abi.ExportDescribe, abi.ExportBuffer, abi.ExportError}

// kindExports are the exports every module of a kind has. A latency calculator's others
// depend on its capabilities (capabilityExports), which only its descriptor says.
var kindExports = map[string][]string{
	abi.KindTraceParser:       {abi.ExportParseBegin, abi.ExportParseFeed, abi.ExportParseEnd},
	abi.KindLatencyCalculator: {abi.ExportCalcConfigure},
}

// optionalExports are looked up on every calculator instance when present; check requires
// the ones its capabilities call for.
var optionalExports = []string{abi.ExportCalcSchedule, abi.ExportStepTime, abi.ExportRequestOverhead}

// stepTimeParams is lens_step_time's signature: prefill_seqs, prefill_tokens,
// prefill_attention, prefill_context, decode_seqs, decode_context, sampled_seqs.
var stepTimeParams = []api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeF64, api.ValueTypeI64,
	api.ValueTypeI32, api.ValueTypeI64, api.ValueTypeI32}

// checkCapabilityExports requires what a calculator's descriptor promises: lens_step_time
// and lens_request_overhead (with their signatures: the host calls them with values only)
// from a step_cost module, lens_calc_schedule from any other.
func checkCapabilityExports(in *instance, d abi.Descriptor) error {
	if d.Kind != abi.KindLatencyCalculator {
		return nil
	}
	if !d.Capabilities[abi.CapabilityStepCost] {
		if in.schedule == nil {
			return fmt.Errorf("%w: latency calculator %q does not export %s (only a %s module may leave it out)", ErrBadModule, d.Name, abi.ExportCalcSchedule, abi.CapabilityStepCost)
		}
		return nil
	}
	for _, want := range []struct {
		f      api.Function
		name   string
		params []api.ValueType
	}{{in.stepTime, abi.ExportStepTime, stepTimeParams}, {in.requestOverhead, abi.ExportRequestOverhead, nil}} {
		if want.f == nil {
			return fmt.Errorf("%w: %q declares %s but does not export %s", ErrBadModule, d.Name, abi.CapabilityStepCost, want.name)
		}
		def := want.f.Definition()
		if !slices.Equal(def.ParamTypes(), want.params) || !slices.Equal(def.ResultTypes(), []api.ValueType{api.ValueTypeI64}) {
			return fmt.Errorf("%w: %q exports %s with parameters %s and results %s, want %s and i64 (ABI.md section 8.1)", ErrBadModule, d.Name, want.name,
				valueTypes(def.ParamTypes()), valueTypes(def.ResultTypes()), valueTypes(want.params))
		}
	}
	return nil
}

func valueTypes(ts []api.ValueType) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = api.ValueTypeName(t)
	}
	return "(" + strings.Join(names, ", ") + ")"
}

func (m *module) instantiate(ctx context.Context) (*instance, error) {
	stderr := &tailBuffer{max: 4096}
	cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions(abi.ExportInitialize).WithStderr(stderr)
	mod, err := m.rt.InstantiateModule(ctx, m.compiled, cfg)
	if err != nil {
		return nil, fmt.Errorf("instantiate %s: %w%s", m.info.Path, err, stderr.suffix())
	}
	// Check the version before anything else: a module of another ABI may not even have
	// the other exports.
	if err := checkVersion(ctx, mod); err != nil {
		mod.Close(ctx)
		return nil, err
	}
	in := &instance{mod: mod, mem: mod.Memory(), stderr: stderr, fn: map[string]api.Function{}, stack: make([]uint64, 8)}
	if in.mem == nil {
		mod.Close(ctx)
		return nil, fmt.Errorf("%w: %s exports no memory", ErrBadModule, m.info.Path)
	}
	names := append([]string{}, commonExports...)
	names = append(names, kindExports[m.info.Kind]...)
	for _, name := range names {
		f := mod.ExportedFunction(name)
		if f == nil {
			mod.Close(ctx)
			return nil, fmt.Errorf("%w: %s does not export %s", ErrBadModule, m.info.Path, name)
		}
		in.fn[name] = f
	}
	if m.info.Kind == abi.KindLatencyCalculator {
		for _, name := range optionalExports {
			if f := mod.ExportedFunction(name); f != nil {
				in.fn[name] = f
			}
		}
		in.schedule, in.stepTime, in.requestOverhead = in.fn[abi.ExportCalcSchedule], in.fn[abi.ExportStepTime], in.fn[abi.ExportRequestOverhead]
	}
	if m.configure != nil {
		if err := m.configure(ctx, in); err != nil {
			mod.Close(ctx)
			return nil, err
		}
	}
	return in, nil
}

func checkVersion(ctx context.Context, mod api.Module) error {
	ver := mod.ExportedFunction(abi.ExportABIVersion)
	if ver == nil {
		return fmt.Errorf("%w: no %s export", ErrBadModule, abi.ExportABIVersion)
	}
	res, err := ver.Call(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", abi.ExportABIVersion, err)
	}
	if got := uint32(res[0]); got != abi.Version {
		return fmt.Errorf("%w: module has ABI version %d, host speaks %d", ErrABIMismatch, got, abi.Version)
	}
	return nil
}

// check starts the first instance (which verifies the ABI version and exports), checks the
// descriptor against the manifest entry, records it and pools the instance.
func (m *module) check(ctx context.Context, e ManifestEntry) (abi.Descriptor, error) {
	in, err := m.get(ctx)
	if err != nil {
		return abi.Descriptor{}, err
	}
	d, err := func() (abi.Descriptor, error) {
		raw, err := in.call(ctx, m, abi.ExportDescribe)
		if err != nil {
			return abi.Descriptor{}, err
		}
		d, err := abi.ParseDescriptor(raw)
		if err != nil {
			return d, err
		}
		if d.ABIVersion != abi.Version {
			return d, fmt.Errorf("%w: descriptor says ABI version %d, host speaks %d", ErrABIMismatch, d.ABIVersion, abi.Version)
		}
		if d.Kind != e.Kind || d.Name != e.Name {
			return d, fmt.Errorf("module describes itself as %s %q but the manifest says %s %q", d.Kind, d.Name, e.Kind, e.Name)
		}
		return d, checkCapabilityExports(in, d)
	}()
	m.put(in, err != nil)
	if err != nil {
		return d, err
	}
	m.setDescriptor(d)
	return d, nil
}

func (m *module) setDescriptor(d abi.Descriptor) {
	m.info.Name, m.info.Version, m.info.ABIVersion = d.Name, d.Version, d.ABIVersion
	m.info.Description = d.Description
	m.info.Capabilities = d.Capabilities
	m.info.TraceRange = d.TraceRange
	if m.info.Capabilities == nil {
		m.info.Capabilities = map[string]bool{}
	}
}

// callCtx bounds a call into a user module; first-party modules are not interruptible
// (their runtime lacks close-on-context-done), so they get ctx unchanged.
func (m *module) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if m.untrusted {
		return context.WithTimeout(ctx, m.host.cfg.CallTimeout)
	}
	return ctx, func() {}
}

// call invokes an export that returns a packed ptr/len (or abi.Failed) and returns a view
// of the bytes in guest memory, valid until the next call on the instance.
func (in *instance) call(ctx context.Context, m *module, name string, args ...uint64) ([]byte, error) {
	f := in.fn[name]
	stack := in.stack[:max(len(args), 1)]
	copy(stack, args)
	cctx, cancel := m.callCtx(ctx)
	err := f.CallWithStack(cctx, stack)
	cancel()
	if err != nil {
		return nil, in.trapError(m, name, err)
	}
	return in.result(m, name, stack[0])
}

func (in *instance) result(m *module, name string, v uint64) ([]byte, error) {
	if v == abi.Failed {
		return nil, &GuestError{Module: m.info.Name, Export: name, Message: in.lastError()}
	}
	ptr, n := abi.Unpack(v)
	b, ok := in.mem.Read(ptr, n)
	if !ok {
		return nil, fmt.Errorf("%w: %s returned bytes %d+%d outside its memory", ErrBadModule, name, ptr, n)
	}
	return b, nil
}

func (in *instance) lastError() string {
	f := in.fn[abi.ExportError]
	stack := in.stack[:1]
	if err := f.CallWithStack(context.Background(), stack); err != nil {
		return "(lens_error failed: " + err.Error() + ")"
	}
	ptr, n := abi.Unpack(stack[0])
	b, ok := in.mem.Read(ptr, n)
	if !ok {
		return "(lens_error returned bytes outside memory)"
	}
	return string(b)
}

func (in *instance) trapError(m *module, name string, err error) error {
	return fmt.Errorf("module %s: %s trapped (instance discarded): %w%s", m.info.Name, name, err, in.stderr.suffix())
}

// writeInput copies b into the guest's input buffer (growing it through lens_buffer when
// needed) and returns its address.
func (in *instance) writeInput(ctx context.Context, m *module, b []byte) (uint32, error) {
	if uint32(len(b)) > in.bufSize || in.bufSize == 0 {
		f := in.fn[abi.ExportBuffer]
		stack := in.stack[:1]
		stack[0] = uint64(max(len(b), 1))
		cctx, cancel := m.callCtx(ctx)
		err := f.CallWithStack(cctx, stack)
		cancel()
		if err != nil {
			return 0, in.trapError(m, abi.ExportBuffer, err)
		}
		in.bufPtr, in.bufSize = uint32(stack[0]), uint32(max(len(b), 1))
	}
	if !in.mem.Write(in.bufPtr, b) {
		return 0, fmt.Errorf("%w: lens_buffer returned %d, outside memory for %d bytes", ErrBadModule, in.bufPtr, len(b))
	}
	return in.bufPtr, nil
}

// GuestError is a failure the module reported through lens_error (bad input, bad
// configuration), as opposed to a trap.
type GuestError struct {
	Module  string
	Export  string
	Message string
}

func (e *GuestError) Error() string { return e.Module + ": " + e.Message }

// IsGuestError reports whether err carries a message from the module itself.
func IsGuestError(err error) bool {
	var g *GuestError
	return errors.As(err, &g)
}

// tailBuffer keeps the last max bytes a guest wrote to stderr (a Go guest's panic text).
type tailBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) suffix() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.b) == 0 {
		return ""
	}
	return "; guest stderr: " + string(t.b)
}
