package wasmhost

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/tetratelabs/wazero/api"

	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/stepcost"
)

// CapabilityStepCost is what a step-cost module reports in ModuleInfo.Capabilities (abi's, for
// callers that may not import the ABI package).
const CapabilityStepCost = abi.CapabilityStepCost

// StepCost is a configured step-cost module (a latency calculator with the step_cost
// capability, ABI.md section 8.1) with its own instance pool, every instance configured once
// when it starts: the engine model's step pricing through WASM. It implements the engine's
// StepCoster contract (StepTime of a *stepcost.Batch, in seconds) and RequestOverhead, so the
// engine uses a module exactly as it uses a native *stepcost.Model. The pool follows
// Calculator's rules: bounded by Config.PoolSize, an instance used by one goroutine at a time
// and discarded after any failure. Safe for concurrent use.
//
// StepTime cannot return an error (the engine's interface has none): a failure returns 0 and
// is kept for Err, the first one only. A caller driving an engine with it checks Err after
// each step (or each run) and reports what it says; StepTimeErr returns the error directly.
type StepCost struct {
	m        *module
	overhead float64

	mu  sync.Mutex
	err error
}

// StepCost returns a step-cost calculator configured with cfg (the model and hardware in
// full, the tensor-parallel size, optional coefficients). nameOrPath is a loaded calculator's
// name (stepcost.ModuleName for the built-in) or the path of a user .wasm whose directory
// holds a manifest pinning it. A module without the step_cost capability and a configuration
// the module refuses are reported here, with the module's own message.
func (h *Host) StepCost(nameOrPath string, cfg stepcost.Config) (*StepCost, error) {
	return h.StepCostJSON(nameOrPath, cfg.JSON())
}

// StepCostJSON is StepCost with the configuration as JSON, passed to the module verbatim: a
// user's module may take fields of its own.
func (h *Host) StepCostJSON(nameOrPath string, configJSON []byte) (*StepCost, error) {
	s := &StepCost{}
	m, err := h.configuredPool(nameOrPath, configJSON, func(info ModuleInfo, in *instance) error {
		if !info.Capabilities[abi.CapabilityStepCost] || in.stepTime == nil || in.requestOverhead == nil {
			return fmt.Errorf("it does not declare the %s capability: it computes request schedules, not engine step costs", abi.CapabilityStepCost)
		}
		return nil
	}, func(ctx context.Context, m *module, in *instance) error {
		stack := in.stack[:1]
		cctx, cancel := m.callCtx(ctx)
		defer cancel()
		if err := in.requestOverhead.CallWithStack(cctx, stack); err != nil {
			return in.trapError(m, abi.ExportRequestOverhead, err)
		}
		ns, err := in.nanoseconds(m, abi.ExportRequestOverhead, stack[0])
		s.overhead = float64(ns) / 1e9
		return err
	})
	if err != nil {
		return nil, err
	}
	s.m = m
	return s, nil
}

// Info describes the module.
func (s *StepCost) Info() ModuleInfo { return s.m.info }

// RequestOverhead is the API server's time per request, in seconds, as the module reported it
// once configured.
func (s *StepCost) RequestOverhead() float64 { return s.overhead }

// StepTime is how long one engine step over b takes, in seconds (the module's nanoseconds /
// 1e9). On a failure it returns 0 and records the error for Err.
func (s *StepCost) StepTime(b *stepcost.Batch) float64 {
	d, err := s.StepTimeErr(b)
	if err != nil {
		s.mu.Lock()
		if s.err == nil {
			s.err = err
		}
		s.mu.Unlock()
		return 0
	}
	return d
}

// Err is the first failure StepTime met, nil while there was none.
func (s *StepCost) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// StepTimeErr is StepTime with its error: a count outside the ABI's i32, a batch the module
// refuses (a GuestError with its message), a trap, or a value that is not a duration. One
// guest call, no memory traffic.
func (s *StepCost) StepTimeErr(b *stepcost.Batch) (float64, error) {
	for _, v := range [...]int{b.PrefillSeqs, b.PrefillTokens, b.DecodeSeqs, b.SampledSeqs} {
		if v < math.MinInt32 || v > math.MaxInt32 {
			return 0, fmt.Errorf("step batch %+v: sequence and token counts must fit in an i32 (the ABI passes them so)", *b)
		}
	}
	m := s.m
	ctx := context.Background()
	in, err := m.get(ctx)
	if err != nil {
		return 0, err
	}
	stack := in.stack[:7]
	stack[0], stack[1] = api.EncodeI32(int32(b.PrefillSeqs)), api.EncodeI32(int32(b.PrefillTokens))
	stack[2], stack[3] = api.EncodeF64(b.PrefillAttention), api.EncodeI64(int64(b.PrefillContext))
	stack[4], stack[5] = api.EncodeI32(int32(b.DecodeSeqs)), api.EncodeI64(int64(b.DecodeContext))
	stack[6] = api.EncodeI32(int32(b.SampledSeqs))
	cctx, cancel := m.callCtx(ctx)
	err = in.stepTime.CallWithStack(cctx, stack)
	cancel()
	if err != nil {
		m.put(in, true)
		return 0, in.trapError(m, abi.ExportStepTime, err)
	}
	ns, err := in.nanoseconds(m, abi.ExportStepTime, stack[0])
	m.put(in, err != nil)
	if err != nil {
		return 0, err
	}
	return float64(ns) / 1e9, nil
}

// Close releases the instances.
func (s *StepCost) Close() { s.m.host.release(s.m) }

// nanoseconds reads a value export's i64 nanoseconds: abi.Failed is the module's own error
// (read through lens_error), any other negative value a broken module.
func (in *instance) nanoseconds(m *module, name string, v uint64) (int64, error) {
	if v == abi.Failed {
		return 0, &GuestError{Module: m.info.Name, Export: name, Message: in.lastError()}
	}
	if int64(v) < 0 {
		return 0, fmt.Errorf("%w: %s returned %d, neither a duration in nanoseconds nor -1 (failed)", ErrBadModule, name, int64(v))
	}
	return int64(v), nil
}
