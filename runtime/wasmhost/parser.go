package wasmhost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/lensfn/lensfn/wasm-modules/abi"
)

// Capability names a trace parser reports in ModuleInfo.Capabilities (abi's, for callers that
// may not import the ABI package).
const (
	CapabilityTraceRange        = abi.CapabilityTraceRange
	CapabilityScaleFactor       = abi.CapabilityScaleFactor
	CapabilitySelectsTraceRange = abi.CapabilitySelectsTraceRange
)

// TraceRequest is the normalised record a parser emits.
type TraceRequest = abi.TraceRequest

// Source is a trace file or a directory of trace files (WEKA: one JSON trace per file).
type Source struct {
	Path string
}

// ParseOptions select and compress the timeline (trace-formats.md 6.3/6.4). The window is
// half-open, [StartSeconds, EndSeconds), on the normalised axis (seconds since the file's
// first request); kept records are shifted by StartSeconds and divided by ScaleFactor. A
// module with abi.CapabilitySelectsTraceRange selects the window itself (ModuleInfo.TraceRange
// says how); the host then only shifts and scales.
type ParseOptions struct {
	StartSeconds float64
	EndSeconds   *float64 // nil: to the end of the trace
	ScaleFactor  float64  // 0 means 1; 2 replays twice as fast
}

// ParseStats summarise one Parse call.
type ParseStats struct {
	Files   int   `json:"files"`
	Bytes   int64 `json:"bytes"`
	Records int   `json:"records"` // records the module produced
	Emitted int   `json:"emitted"` // records inside the window, handed to emit
	// BeforeStart and AfterEnd are the records the host's window left out on either side
	// (always 0 for a module that selects its range itself).
	BeforeStart int `json:"before_start"`
	AfterEnd    int `json:"after_end"`
	// FirstRecordedMs / LastRecordedMs bound the recorded positions of all records
	// (before windowing); the trace's duration is their difference.
	FirstRecordedMs float64 `json:"first_recorded_ms"`
	LastRecordedMs  float64 `json:"last_recorded_ms"`
}

// Parser parses one trace format through its module.
type Parser struct {
	m *module
}

// Parser returns the parser for format, or an error wrapping ErrUnknownModule.
func (h *Host) Parser(format string) (*Parser, error) {
	m, err := h.lookup(format, abi.KindTraceParser)
	if err != nil {
		return nil, err
	}
	return &Parser{m: m}, nil
}

// Info describes the parser's module.
func (p *Parser) Info() ModuleInfo { return p.m.info }

// chunkSize is how much input one lens_parse_feed call receives.
const chunkSize = 256 << 10

// Validate checks opts against the format's capabilities.
func (p *Parser) Validate(opts ParseOptions) error {
	caps := p.m.info.Capabilities
	if opts.StartSeconds < 0 || math.IsNaN(opts.StartSeconds) || math.IsInf(opts.StartSeconds, 0) {
		return fmt.Errorf("trace start %v s: must be a finite number >= 0", opts.StartSeconds)
	}
	if opts.EndSeconds != nil && !(*opts.EndSeconds > opts.StartSeconds) {
		return fmt.Errorf("trace end %v s: must be greater than the start %v s", *opts.EndSeconds, opts.StartSeconds)
	}
	if opts.ScaleFactor < 0 || math.IsNaN(opts.ScaleFactor) || math.IsInf(opts.ScaleFactor, 0) {
		return fmt.Errorf("scale factor %v: must be a finite number > 0", opts.ScaleFactor)
	}
	if (opts.StartSeconds != 0 || opts.EndSeconds != nil) && !caps[abi.CapabilityTraceRange] {
		return fmt.Errorf("format %s does not support a trace range (%s); leave start and end unset", p.m.info.Name, abi.CapabilityTraceRange)
	}
	if opts.ScaleFactor != 0 && opts.ScaleFactor != 1 && !caps[abi.CapabilityScaleFactor] {
		return fmt.Errorf("format %s does not support a scale factor (%s); leave it at 1", p.m.info.Name, abi.CapabilityScaleFactor)
	}
	return nil
}

// Parse streams the records of src through emit, in file order (directory entries sorted
// by name). Each record is freshly allocated, so emit may keep it. Memory stays flat: input
// goes to the module in chunks and records come back per chunk.
func (p *Parser) Parse(ctx context.Context, src Source, opts ParseOptions, emit func(*TraceRequest) error) (ParseStats, error) {
	var stats ParseStats
	if err := p.Validate(opts); err != nil {
		return stats, err
	}
	files, err := sourceFiles(src.Path)
	if err != nil {
		return stats, err
	}
	w := window{start: opts.StartSeconds * 1000, scale: opts.ScaleFactor, byModule: p.m.info.Capabilities[abi.CapabilitySelectsTraceRange]}
	if opts.EndSeconds != nil {
		w.end, w.hasEnd = *opts.EndSeconds*1000, true
	}
	begin := abi.ParseBegin{}
	if w.byModule {
		begin.StartMs = w.start
		if w.hasEnd {
			end := w.end
			begin.EndMs = &end
		}
	}
	if w.scale == 0 {
		w.scale = 1
	}
	first := true
	filter := func(r *TraceRequest) error {
		stats.Records++
		if first || r.RecordedMs < stats.FirstRecordedMs {
			stats.FirstRecordedMs = r.RecordedMs
		}
		if first || r.RecordedMs > stats.LastRecordedMs {
			stats.LastRecordedMs = r.RecordedMs
		}
		first = false
		switch w.apply(r) {
		case before:
			stats.BeforeStart++
			return nil
		case after:
			stats.AfterEnd++
			return nil
		}
		stats.Emitted++
		return emit(r)
	}
	for _, f := range files {
		n, err := p.parseFile(ctx, f, begin, filter)
		stats.Files++
		stats.Bytes += n
		if err != nil {
			return stats, err
		}
	}
	return stats, nil
}

// ParseRaw runs the module over one file and emits the records exactly as the module
// produced them (no window, no scaling). Conformance tests compare it with the native core.
func (p *Parser) ParseRaw(ctx context.Context, path string, emit func(*TraceRequest) error) error {
	_, err := p.parseFile(ctx, path, abi.ParseBegin{}, emit)
	return err
}

// ParseRawWindowed is ParseRaw with the window handed to a module that selects its range
// itself (the records as the module emitted them, neither shifted nor scaled).
func (p *Parser) ParseRawWindowed(ctx context.Context, path string, startMs float64, endMs *float64, emit func(*TraceRequest) error) error {
	_, err := p.parseFile(ctx, path, abi.ParseBegin{StartMs: startMs, EndMs: endMs}, emit)
	return err
}

type window struct {
	start, end, scale float64
	hasEnd            bool
	byModule          bool // the module selected the window; only shift and scale
}

// Where a record falls against the window.
const (
	inside = iota
	before
	after
)

// apply decides whether r is inside the window and, if so, shifts and scales it. A record
// with an arrival time is placed by it; a delay-driven one by its recorded position.
func (w window) apply(r *TraceRequest) int {
	t := r.RecordedMs
	if r.ArrivalMs != nil {
		t = *r.ArrivalMs
	}
	switch {
	case w.byModule:
	case t < w.start:
		return before
	case w.hasEnd && t >= w.end:
		return after
	}
	if r.ArrivalMs != nil {
		v := (*r.ArrivalMs - w.start) / w.scale
		r.ArrivalMs = &v
	}
	if r.DelayMs != nil && w.scale != 1 {
		v := *r.DelayMs / w.scale
		r.DelayMs = &v
	}
	if r.JoinDelayMs != nil && w.scale != 1 {
		v := *r.JoinDelayMs / w.scale
		r.JoinDelayMs = &v
	}
	return inside
}

func sourceFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("trace source: %w", err)
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("trace source: %w", err)
	}
	var files []string
	for _, e := range entries {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
			files = append(files, filepath.Join(path, e.Name()))
		}
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("trace source %s: directory has no files", path)
	}
	return files, nil
}

func (p *Parser) parseFile(ctx context.Context, path string, begin abi.ParseBegin, emit func(*TraceRequest) error) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("trace source: %w", err)
	}
	defer f.Close()
	m := p.m
	in, err := m.get(ctx)
	if err != nil {
		return 0, err
	}
	failed := true
	defer func() { m.put(in, failed) }()

	base := filepath.Base(path)
	wrap := func(err error) error { return fmt.Errorf("%s: %w", base, err) }
	decode := func(out []byte) error {
		return abi.DecodeRecords(out, func(r *TraceRequest) error {
			r.Source = base
			return emit(r)
		})
	}
	begin.Source = base
	beginJSON, _ := json.Marshal(begin)
	ptr, err := in.writeInput(ctx, m, beginJSON)
	if err != nil {
		return 0, wrap(err)
	}
	if _, err := in.call(ctx, m, abi.ExportParseBegin, uint64(ptr), uint64(len(beginJSON))); err != nil {
		return 0, wrap(err)
	}
	buf := make([]byte, chunkSize)
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		n, rerr := io.ReadFull(f, buf)
		if n > 0 {
			total += int64(n)
			ptr, err := in.writeInput(ctx, m, buf[:n])
			if err != nil {
				return total, wrap(err)
			}
			out, err := in.call(ctx, m, abi.ExportParseFeed, uint64(ptr), uint64(n))
			if err != nil {
				return total, wrap(err)
			}
			if err := decode(out); err != nil {
				return total, wrap(err)
			}
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			return total, fmt.Errorf("trace source: %w", rerr)
		}
	}
	out, err := in.call(ctx, m, abi.ExportParseEnd)
	if err != nil {
		return total, wrap(err)
	}
	if err := decode(out); err != nil {
		return total, wrap(err)
	}
	failed = false
	return total, nil
}
