package simulationapi

import (
	"context"
	"errors"
	"sort"

	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/wasmhost"
)

// kindTraceParser is the module kind of trace parsers in the WASM ABI.
const kindTraceParser = "trace-parser"

// wasmParsers reads traces through the parser modules loaded by the WASM host.
type wasmParsers struct{ host *wasmhost.Host }

// NewWASMParsers serves TraceParsers from the host's trace-parser modules.
func NewWASMParsers(host *wasmhost.Host) TraceParsers { return wasmParsers{host} }

func (w wasmParsers) Formats() []TraceFormat {
	var out []TraceFormat
	for _, m := range w.host.Modules() {
		if m.Kind != kindTraceParser {
			continue
		}
		out = append(out, TraceFormat{Name: m.Name, SupportsTraceRange: m.Capabilities[wasmhost.CapabilityTraceRange],
			SupportsScaleFactor: m.Capabilities[wasmhost.CapabilityScaleFactor], TraceRange: m.TraceRange})
	}
	// A parser still being built or compiling (a first start) is listed too, with its state:
	// its capabilities are known once it is loaded.
	for _, s := range w.host.Status() {
		if s.Kind == kindTraceParser && (s.State == wasmhost.StateBuilding || s.State == wasmhost.StateCompiling) {
			out = append(out, TraceFormat{Name: s.Name, State: string(s.State)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (w wasmParsers) Arrivals(ctx context.Context, format, path string, emit func(float64)) error {
	p, err := w.host.Parser(format)
	if err != nil {
		return compilingProblem(err)
	}
	_, err = p.Parse(ctx, wasmhost.Source{Path: path}, wasmhost.ParseOptions{}, func(r *wasmhost.TraceRequest) error {
		emit(r.RecordedMs / 1000)
		return nil
	})
	return err
}

// Pending is the 503 for a format whose parser module is still compiling, nil otherwise
// (a format the host does not configure, or one that is loaded or failed).
func (w wasmParsers) Pending(format string) error {
	if _, err := w.host.Parser(format); errors.Is(err, wasmhost.ErrCompiling) {
		return compilingProblem(err)
	}
	return nil
}

// Wait blocks while format's parser module is still compiling (an event stage waits
// instead of failing).
func (w wasmParsers) Wait(ctx context.Context, format string) error { return w.host.Wait(ctx, format) }

// compilingProblem turns "the module is still compiling" into a 503 naming it, with
// Retry-After; other errors pass unchanged.
func compilingProblem(err error) error {
	if errors.Is(err, wasmhost.ErrCompiling) {
		return problem.Wrap(problem.CodeStarting, err, err.Error())
	}
	return err
}

// Build is the function's fn.Builder: it loads the WASM modules, then the routes.
func Build(ctx context.Context, d fn.Deps) (*fn.Function, error) {
	host, err := wasmhost.Open(ctx, wasmhost.Dirs{Builtin: d.Config.BuiltinModuleDir, User: d.Config.ModuleDir, Cache: d.Config.CacheDir}, d.Log.Infof)
	if err != nil {
		return nil, err
	}
	f, _, err := New(d, NewWASMParsers(host))
	if err != nil {
		_ = host.Close(ctx)
		return nil, err
	}
	f.Close = host.Close
	f.Warming = host.Warming
	return f, nil
}
