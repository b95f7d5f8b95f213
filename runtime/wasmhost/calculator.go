package wasmhost

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/latency"
)

// Calculator is a configured latency calculator with its own instance pool; every
// instance received the configuration once, when it started. It implements
// latency.Calculator, so the simulator uses a module exactly as it uses a built-in model.
// Safe for concurrent use.
type Calculator struct {
	m *module
}

// Calculator returns a calculator configured with configJSON (the simulator's latency
// flags under their flag names, durations as "10ms"/"500us" strings or numbers of ms).
// nameOrPath is a loaded calculator's name or the path of a user .wasm whose directory
// holds a manifest pinning it. A bad configuration is reported here, not per call, and so is
// a step-cost module without lens_calc_schedule (StepCost takes those).
func (h *Host) Calculator(nameOrPath string, configJSON []byte) (*Calculator, error) {
	if len(configJSON) == 0 {
		configJSON = []byte("{}")
	}
	m, err := h.configuredPool(nameOrPath, configJSON, func(_ ModuleInfo, in *instance) error {
		if in.schedule == nil {
			return fmt.Errorf("it does not export %s: it is a %s module, which prices engine steps for the engine model, not whole requests",
				abi.ExportCalcSchedule, abi.CapabilityStepCost)
		}
		return nil
	}, nil)
	if err != nil {
		return nil, err
	}
	return &Calculator{m: m}, nil
}

// configuredPool starts a pool of nameOrPath's instances, each given config through
// lens_calc_configure when it starts, once accept has found the exports this use needs. It
// starts the first instance now, so a bad configuration fails here, and hands it to first
// (when set), which may call into it.
func (h *Host) configuredPool(nameOrPath string, config []byte, accept func(ModuleInfo, *instance) error,
	first func(ctx context.Context, m *module, in *instance) error) (*module, error) {
	base, err := h.calculatorModule(nameOrPath)
	if err != nil {
		return nil, err
	}
	config = append([]byte{}, config...)
	if err := base.ensureCompiled(); err != nil {
		return nil, err
	}
	m := &module{host: h, rt: base.rt, path: base.path, sha256: base.sha256, info: base.info, untrusted: base.untrusted, shared: true}
	m.compileOnce.Do(func() { m.compiled = base.compiled })
	m.configure = func(ctx context.Context, in *instance) error {
		if err := accept(m.info, in); err != nil {
			return err
		}
		ptr, err := in.writeInput(ctx, m, config)
		if err != nil {
			return err
		}
		_, err = in.call(ctx, m, abi.ExportCalcConfigure, uint64(ptr), uint64(len(config)))
		return err
	}
	m.initPool(h.cfg.PoolSize)
	ctx := context.Background()
	in, err := m.get(ctx)
	if err == nil && first != nil {
		err = first(ctx, m, in)
		m.put(in, err != nil)
	} else if err == nil {
		m.put(in, false)
	}
	if err != nil {
		m.close(ctx)
		return nil, fmt.Errorf("latency calculator %s: %w", m.info.Name, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		m.close(ctx)
		return nil, ErrClosed
	}
	h.calcs = append(h.calcs, m)
	return m, nil
}

func (h *Host) calculatorModule(nameOrPath string) (*module, error) {
	if !strings.HasSuffix(nameOrPath, ".wasm") {
		return h.lookup(nameOrPath, abi.KindLatencyCalculator)
	}
	path, err := filepath.Abs(nameOrPath)
	if err != nil {
		return nil, err
	}
	man, err := ReadManifest(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("latency calculator %s: a user module needs a manifest beside it: %w", nameOrPath, err)
	}
	for _, e := range man.Modules {
		if e.File != filepath.Base(path) {
			continue
		}
		if e.Kind != abi.KindLatencyCalculator {
			return nil, fmt.Errorf("latency calculator %s: manifest kind is %q", nameOrPath, e.Kind)
		}
		h.mu.Lock()
		m := h.extra[strings.ToLower(e.SHA256)]
		h.mu.Unlock()
		if m != nil {
			return m, nil
		}
		m, err := h.load(context.Background(), path, e, false, false)
		if err != nil {
			return nil, err
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if prev := h.extra[strings.ToLower(e.SHA256)]; prev != nil {
			m.close(context.Background())
			return prev, nil
		}
		h.extra[strings.ToLower(e.SHA256)] = m
		return m, nil
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("latency calculator %s: %w", nameOrPath, err)
	}
	return nil, fmt.Errorf("latency calculator %s: not listed in %s", nameOrPath, filepath.Join(filepath.Dir(path), ManifestFile))
}

// Info describes the calculator's module.
func (c *Calculator) Info() ModuleInfo { return c.m.info }

// Schedule returns the request's time to first token and its OutputTokens-1 inter-token
// gaps, appended to gaps[:0] (pass the previous result to reuse its storage). One guest
// call per request.
func (c *Calculator) Schedule(in latency.Input, gaps []time.Duration) (time.Duration, []time.Duration, error) {
	for _, v := range [...]int{in.PromptTokens, in.CachedPromptTokens, in.OutputTokens, in.RunningRequests, in.MaxNumSeqs} {
		if v < 0 || v > math.MaxInt32 {
			return 0, gaps[:0], fmt.Errorf("latency input %+v: counts must be in [0, 2^31) (the ABI passes i32)", in)
		}
	}
	m := c.m
	ctx := context.Background()
	inst, err := m.get(ctx)
	if err != nil {
		return 0, gaps[:0], err
	}
	var flags uint64
	if in.RemotePrefill {
		flags |= uint64(abi.ScheduleFlagRemotePrefill)
	}
	stack := inst.stack[:7]
	stack[0], stack[1], stack[2] = uint64(in.PromptTokens), uint64(in.CachedPromptTokens), uint64(in.OutputTokens)
	stack[3], stack[4], stack[5], stack[6] = uint64(in.RunningRequests), uint64(in.MaxNumSeqs), flags, in.Rand
	cctx, cancel := m.callCtx(ctx)
	err = inst.schedule.CallWithStack(cctx, stack)
	cancel()
	if err != nil {
		m.put(inst, true)
		return 0, gaps[:0], inst.trapError(m, abi.ExportCalcSchedule, err)
	}
	out, err := inst.result(m, abi.ExportCalcSchedule, stack[0])
	if err != nil {
		m.put(inst, true)
		return 0, gaps[:0], err
	}
	want := 1 + max(in.OutputTokens-1, 0)
	if len(out) != 8*want {
		m.put(inst, true)
		return 0, gaps[:0], fmt.Errorf("%w: %s returned %d bytes, want %d (TTFT + %d gaps as i64 ns)", ErrBadModule, abi.ExportCalcSchedule, len(out), 8*want, want-1)
	}
	ttft := time.Duration(binary.LittleEndian.Uint64(out))
	gaps = gaps[:0]
	for i := 8; i < len(out); i += 8 {
		gaps = append(gaps, time.Duration(binary.LittleEndian.Uint64(out[i:])))
	}
	m.put(inst, false)
	return ttft, gaps, nil
}

// Close releases the calculator's instances. The simulator rebuilds its calculator when
// the latency configuration changes; closing the old one keeps the host from holding it.
func (c *Calculator) Close() { c.m.host.release(c.m) }

// release closes a configured calculator's pool and forgets it.
func (h *Host) release(m *module) {
	h.mu.Lock()
	for i, c := range h.calcs {
		if c == m {
			h.calcs = append(h.calcs[:i], h.calcs[i+1:]...)
			break
		}
	}
	h.mu.Unlock()
	m.close(context.Background())
}
