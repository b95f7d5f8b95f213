package simulationapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sync/singleflight"
)

// TraceFormat is what the catalogue says about one trace format, from its parser module.
type TraceFormat struct {
	Name                string
	SupportsTraceRange  bool
	SupportsScaleFactor bool
	// TraceRange says what a trace range selects (empty: DefaultTraceRange).
	TraceRange string
	// State is "building" or "compiling" while the format's parser module is not ready yet
	// (a first start; its capabilities are then unknown), empty once it is.
	State string
}

// TraceParsers reads traces through the parser modules.
type TraceParsers interface {
	// Formats lists the parser modules, built-in and user, sorted by name: the loaded ones
	// and those still being built or compiling (with their State).
	Formats() []TraceFormat
	// Arrivals calls emit with the arrival time of every request of the trace at path, in
	// seconds on the format's normalised axis (0 = the first request of the file).
	Arrivals(ctx context.Context, format, path string, emit func(seconds float64)) error
}

// loadingParsers is what TraceParsers whose modules load in the background add (the WASM
// host's): Pending is a 503 naming a format's module while it compiles, Wait waits for it.
type loadingParsers interface {
	Pending(format string) error
	Wait(ctx context.Context, format string) error
}

// pending is the 503 for a format whose parser is still compiling, nil otherwise.
func pending(p TraceParsers, format string) error {
	if lp, ok := p.(loadingParsers); ok {
		return lp.Pending(format)
	}
	return nil
}

// waitFor blocks while format's parser is still compiling.
func waitFor(ctx context.Context, p TraceParsers, format string) error {
	if lp, ok := p.(loadingParsers); ok {
		return lp.Wait(ctx, format)
	}
	return nil
}

// Timeline is the response of GET /trace-datasets/{name}/timeline.
type Timeline struct {
	Dataset         string        `json:"dataset"`
	TraceFormat     string        `json:"trace_format"`
	RequestCount    int           `json:"request_count"`
	DurationSeconds float64       `json:"duration_seconds"`
	SourceSizeBytes int64         `json:"source_size_bytes"`
	BinWidthSeconds float64       `json:"bin_width_seconds"`
	Bins            []TimelineBin `json:"bins"`
}

// TimelineBin counts the requests arriving in [start, end).
type TimelineBin struct {
	StartSeconds float64 `json:"start_seconds"`
	EndSeconds   float64 `json:"end_seconds"`
	RequestCount int     `json:"request_count"`
}

// timelineIndex is what one parse of a dataset leaves: its arrival times. It is stored beside the
// dataset so any bin count is answered exactly without parsing again.
type timelineIndex struct {
	Version       int     `json:"version"`
	TraceFormat   string  `json:"trace_format"`
	SourceSize    int64   `json:"source_size"`
	SourceMtimeNs int64   `json:"source_mtime_ns"`
	RequestCount  int     `json:"request_count"`
	Duration      float64 `json:"duration_seconds"`
	arrivals      []float64
}

const (
	timelineIndexVersion = 1
	timelineIndexMagic   = "LENSTL1\n"
)

// Timelines builds, stores and caches dataset timeline indexes.
type Timelines struct {
	Parsers TraceParsers
	// OnBuild, when set, is told each time a dataset is parsed for its index.
	OnBuild func(dataset string)
	flights singleflight.Group
	mu      sync.Mutex
	cache   map[string]*timelineIndex // by index path
}

func indexPath(datasetPath string) string {
	return filepath.Join(filepath.Dir(datasetPath), "."+filepath.Base(datasetPath)+".timeline.v1")
}

// sourceStamp identifies a dataset's bytes cheaply: size and modification time (the newest file's,
// for a directory).
func sourceStamp(path string) (size, mtime int64, err error) {
	info, err := os.Stat(path)
	if err != nil {
		return 0, 0, err
	}
	if !info.IsDir() {
		return info.Size(), info.ModTime().UnixNano(), nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return 0, 0, err
	}
	mtime = info.ModTime().UnixNano()
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && !fi.IsDir() {
			size += fi.Size()
			mtime = max(mtime, fi.ModTime().UnixNano())
		}
	}
	return size, mtime, nil
}

// Get returns the dataset's index, from memory, from disk, or by parsing it once.
func (t *Timelines) Get(ctx context.Context, d Dataset, path string) (*timelineIndex, error) {
	size, mtime, err := sourceStamp(path)
	if err != nil {
		return nil, err
	}
	ip := indexPath(path)
	fresh := func(ix *timelineIndex) bool {
		return ix != nil && ix.SourceSize == size && ix.SourceMtimeNs == mtime && ix.TraceFormat == d.TraceFormat
	}
	t.mu.Lock()
	ix := t.cache[ip]
	t.mu.Unlock()
	if fresh(ix) {
		return ix, nil
	}
	if ix, err := readIndex(ip); err == nil && fresh(ix) {
		t.remember(ip, ix)
		return ix, nil
	}
	return t.Build(ctx, d, path)
}

// Build parses the dataset and replaces its stored index; concurrent builds share one parse.
func (t *Timelines) Build(ctx context.Context, d Dataset, path string) (*timelineIndex, error) {
	v, err, _ := t.flights.Do(path, func() (any, error) {
		size, mtime, err := sourceStamp(path)
		if err != nil {
			return nil, err
		}
		ix := &timelineIndex{Version: timelineIndexVersion, TraceFormat: d.TraceFormat, SourceSize: size, SourceMtimeNs: mtime}
		err = t.Parsers.Arrivals(context.WithoutCancel(ctx), d.TraceFormat, path, func(s float64) {
			ix.arrivals = append(ix.arrivals, s)
		})
		if err != nil {
			return nil, err
		}
		if t.OnBuild != nil {
			t.OnBuild(d.Name)
		}
		ix.RequestCount = len(ix.arrivals)
		if ix.RequestCount == 0 {
			return nil, errors.New("the trace holds no requests")
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, a := range ix.arrivals {
			lo, hi = min(lo, a), max(hi, a)
		}
		for i := range ix.arrivals { // the axis starts at the first request, whatever the file order
			ix.arrivals[i] -= lo
		}
		ix.Duration = hi - lo
		if err := writeIndex(indexPath(path), ix); err != nil {
			return nil, err
		}
		t.remember(indexPath(path), ix)
		return ix, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*timelineIndex), nil
}

func (t *Timelines) remember(path string, ix *timelineIndex) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cache == nil {
		t.cache = map[string]*timelineIndex{}
	}
	t.cache[path] = ix
}

// Bin answers a timeline of exactly bins equal-width bins over the trace's duration, empty ones
// included (the route bounds bins to 50-2000, the spec's range); a trace without duration
// (no requests, or all at one instant) has no width to divide and answers one bin [0, 0].
func (ix *timelineIndex) Bin(bins int) (width float64, out []TimelineBin) {
	n := max(1, bins)
	if ix.Duration == 0 {
		n = 1
	}
	counts := make([]int, n)
	width = ix.Duration / float64(n)
	for _, a := range ix.arrivals {
		i := n - 1
		if width > 0 {
			i = min(n-1, int(a/width))
		}
		counts[i]++
	}
	out = make([]TimelineBin, n)
	for i, c := range counts {
		end := float64(i+1) * width
		if i == n-1 {
			end = ix.Duration
		}
		out[i] = TimelineBin{StartSeconds: float64(i) * width, EndSeconds: end, RequestCount: c}
	}
	return width, out
}

func writeIndex(path string, ix *timelineIndex) error {
	var buf bytes.Buffer
	buf.WriteString(timelineIndexMagic)
	header, _ := json.Marshal(ix)
	buf.Write(header)
	buf.WriteByte('\n')
	raw := make([]byte, 8*len(ix.arrivals))
	for i, a := range ix.arrivals {
		binary.LittleEndian.PutUint64(raw[8*i:], math.Float64bits(a))
	}
	buf.Write(raw)
	return writeFileAtomic(path, buf.Bytes())
}

func readIndex(path string) (*timelineIndex, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	magic := make([]byte, len(timelineIndexMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != timelineIndexMagic {
		return nil, fmt.Errorf("%s is not a timeline index", path)
	}
	line, err := r.ReadBytes('\n')
	if err != nil {
		return nil, err
	}
	ix := &timelineIndex{}
	if err := json.Unmarshal(line, ix); err != nil || ix.Version != timelineIndexVersion {
		return nil, fmt.Errorf("%s has an unknown index version", path)
	}
	raw, err := io.ReadAll(r)
	if err != nil || len(raw) != 8*ix.RequestCount {
		return nil, fmt.Errorf("%s is truncated", path)
	}
	ix.arrivals = make([]float64, ix.RequestCount)
	for i := range ix.arrivals {
		ix.arrivals[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
	}
	return ix, nil
}
