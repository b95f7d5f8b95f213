package conformance_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/inferencesim"
	"github.com/lensfn/lensfn/runtime/wasmhost"
	"github.com/lensfn/lensfn/runtime/wasmhost/wasmtest"
	"github.com/lensfn/lensfn/tests/tracefixture"
	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/latency"
	"github.com/lensfn/lensfn/wasm-modules/stepcost"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/bailian"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/baseten"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/burstgpt"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/mooncake"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/weka"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/weka/wekatest"
)

func TestBuiltinModulesDescribeThemselves(t *testing.T) {
	dir := wasmtest.BuiltinDir(t)
	h := newHost(t, wasmhost.Config{BuiltinDir: dir})
	man, err := wasmhost.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	pinned := map[string]string{}
	for _, e := range man.Modules {
		pinned[e.Name] = e.SHA256
	}
	want := map[string]struct {
		kind    string
		rangeOK bool
		scaleOK bool
	}{
		"mooncake_trace":      {abi.KindTraceParser, true, true},
		"bailian_trace":       {abi.KindTraceParser, true, true},
		"baseten_trace":       {abi.KindTraceParser, true, true},
		"burst_gpt_trace":     {abi.KindTraceParser, true, true},
		"weka_public_dataset": {abi.KindTraceParser, true, true},
		"constant":            {abi.KindLatencyCalculator, false, false},
		"per-token":           {abi.KindLatencyCalculator, false, false},
		"stepcost":            {abi.KindLatencyCalculator, false, false},
	}
	mods := h.Modules()
	if len(mods) != len(want) {
		t.Fatalf("got %d modules, want %d: %+v", len(mods), len(want), mods)
	}
	for _, m := range mods {
		w, ok := want[m.Name]
		if !ok {
			t.Fatalf("unexpected module %q", m.Name)
		}
		if m.Kind != w.kind || m.ABIVersion != abi.Version || !m.Builtin || m.SHA256 != pinned[m.Name] || m.Version == "" {
			t.Errorf("%s: %+v", m.Name, m)
		}
		if m.Capabilities[abi.CapabilityTraceRange] != w.rangeOK || m.Capabilities[abi.CapabilityScaleFactor] != w.scaleOK {
			t.Errorf("%s: capabilities %v", m.Name, m.Capabilities)
		}
		// Only the step-cost module prices engine steps.
		if stepCost := m.Name == stepcost.ModuleName; m.Capabilities[abi.CapabilityStepCost] != stepCost {
			t.Errorf("%s: step_cost %v", m.Name, m.Capabilities[abi.CapabilityStepCost])
		}
		// WEKA selects its range itself (turns on each trace's clock) and says so.
		if selects := m.Name == "weka_public_dataset"; m.Capabilities[abi.CapabilitySelectsTraceRange] != selects || (m.TraceRange != "") != selects {
			t.Errorf("%s: selects_trace_range %v, trace_range %q", m.Name, m.Capabilities[abi.CapabilitySelectsTraceRange], m.TraceRange)
		}
	}
	if _, err := h.Parser("no_such_format"); !errors.Is(err, wasmhost.ErrUnknownModule) {
		t.Errorf("unknown format: %v", err)
	}
	if _, err := h.Parser("constant"); !errors.Is(err, wasmhost.ErrUnknownModule) {
		t.Errorf("a calculator used as a parser: %v", err)
	}
}

// The heart of conformance: the guest's records are byte-identical to the native core's, on
// generated mooncake and WEKA traces and the hand-written cases always, and on the real
// traces as well when they are present.
func TestParsersMatchNativeCores(t *testing.T) {
	h := builtinHost(t)
	root := wasmtest.RepoRoot(t)
	basetenFile := filepath.Join(t.TempDir(), "baseten.parquet")
	sample, err := baseten.EncodeSample(baseten.Sample())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(basetenFile, sample, 0o644); err != nil {
		t.Fatal(err)
	}
	type input struct {
		format string
		core   func() tracefmt.Parser
		path   string
	}
	moon := func() tracefmt.Parser { return mooncake.New() }
	wk := func() tracefmt.Parser { return weka.New() }
	generatedWEKA, _ := tracefixture.WEKADir(t, 6, 12)
	inputs := []input{
		{"mooncake_trace", moon, tracefixture.WriteFile(t, "generated.jsonl", tracefixture.MooncakeJSONL(tracefixture.Mooncake(3000, 600000, 1)))},
		{"mooncake_trace", moon, filepath.Join(root, "wasm-modules/tracefmt/mooncake/testdata/sessions.jsonl")},
		{"bailian_trace", func() tracefmt.Parser { return bailian.New() }, filepath.Join(root, "wasm-modules/tracefmt/bailian/testdata/conversations.jsonl")},
		{"burst_gpt_trace", func() tracefmt.Parser { return burstgpt.New() }, filepath.Join(root, "wasm-modules/tracefmt/burstgpt/testdata/burstgpt.csv")},
		{"baseten_trace", func() tracefmt.Parser { return baseten.New() }, basetenFile},
		{"weka_public_dataset", wk, filepath.Join(root, "wasm-modules/tracefmt/weka/testdata/subagents.json")},
	}
	generated, _ := filepath.Glob(filepath.Join(generatedWEKA, "*.json"))
	for _, f := range generated {
		inputs = append(inputs, input{"weka_public_dataset", wk, f})
	}
	t.Run("real traces", func(t *testing.T) {
		traces := sharedTraces(t)
		inputs = append(inputs, input{"mooncake_trace", moon, filepath.Join(traces, "mooncake", "conversation_trace.jsonl")})
		wekaFiles, _ := filepath.Glob(filepath.Join(traces, "weka", "kv-cache-tester", "*.json"))
		if len(wekaFiles) == 0 {
			t.Fatal("no WEKA traces")
		}
		for _, f := range wekaFiles {
			inputs = append(inputs, input{"weka_public_dataset", wk, f})
		}
	})
	total := 0
	for _, in := range inputs {
		native := nativeRecords(t, in.core(), in.path)
		guest := guestRecords(t, h, in.format, in.path)
		if len(native) == 0 {
			t.Fatalf("%s: native core produced no records", in.path)
		}
		if len(native) != len(guest) {
			t.Fatalf("%s on %s: guest %d records, native %d", in.format, in.path, len(guest), len(native))
		}
		for i := range native {
			if !bytes.Equal(native[i], guest[i]) {
				t.Fatalf("%s on %s: record %d differs", in.format, in.path, i)
			}
		}
		total += len(native)
	}
	t.Logf("%d inputs, %d records identical", len(inputs), total)
}

// A module that selects its range itself does so identically to its native core.
func TestWindowedWEKAMatchesTheNativeCore(t *testing.T) {
	h := builtinHost(t)
	p, err := h.Parser("weka_public_dataset")
	if err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, "agents.jsonl", string(wekatest.JSONL(wekatest.Agents(3, 60))))
	for _, w := range [][2]float64{{0, -1}, {7, 40}, {30, -1}, {0, 9}} {
		var end *float64
		if w[1] >= 0 {
			e := w[1] * 1000
			end = &e
		}
		var native, guest [][]byte
		if err := tracefmt.ParseFile(weka.NewWindowed(w[0]*1000, end), path, 4096, func(r *abi.TraceRequest) error {
			native = append(native, abi.AppendRecord(nil, r))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := p.ParseRawWindowed(context.Background(), path, w[0]*1000, end, func(r *abi.TraceRequest) error {
			guest = append(guest, abi.AppendRecord(nil, r))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(native) == 0 || len(native) != len(guest) {
			t.Fatalf("window %v: guest %d records, native %d", w, len(guest), len(native))
		}
		for i := range native {
			if !bytes.Equal(native[i], guest[i]) {
				t.Fatalf("window %v: record %d differs", w, i)
			}
		}
	}
}

// TestMooncakeTimelineThroughHost: whole-file statistics and a window through the host, on a
// generated hour-long trace, and on the real conversation trace when it is present.
func TestMooncakeTimelineThroughHost(t *testing.T) {
	h := builtinHost(t)
	p, err := h.Parser("mooncake_trace")
	if err != nil {
		t.Fatal(err)
	}
	rows := tracefixture.Mooncake(4000, 3600000, 2)
	raw := tracefixture.MooncakeJSONL(rows)
	generated := tracefixture.WriteFile(t, "conversation_trace.jsonl", raw)
	t.Run("generated", func(t *testing.T) {
		checkMooncakeTimeline(t, p, generated, len(rows), float64(rows[len(rows)-1].TimestampMs), int64(len(raw)))
	})
	t.Run("real", func(t *testing.T) {
		checkMooncakeTimeline(t, p, filepath.Join(sharedTraces(t), "mooncake", "conversation_trace.jsonl"), 12031, 3536999, 3029533)
	})
}

func checkMooncakeTimeline(t *testing.T, p *wasmhost.Parser, path string, records int, lastMs float64, size int64) {
	src := wasmhost.Source{Path: path}
	ctx := context.Background()
	st, err := p.Parse(ctx, src, wasmhost.ParseOptions{}, func(*wasmhost.TraceRequest) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if st.Records != records || st.Emitted != records || st.LastRecordedMs != lastMs || st.Bytes != size {
		t.Fatalf("stats %+v, want %d records, last at %v ms, %d bytes", st, records, lastMs, size)
	}
	// Ten minutes starting at minute 5, replayed twice as fast.
	end := 900.0
	var first, last float64 = -1, 0
	st, err = p.Parse(ctx, src, wasmhost.ParseOptions{StartSeconds: 300, EndSeconds: &end, ScaleFactor: 2}, func(r *wasmhost.TraceRequest) error {
		if first < 0 {
			first = *r.ArrivalMs
		}
		last = *r.ArrivalMs
		if r.Source != "conversation_trace.jsonl" {
			t.Fatalf("source %q", r.Source)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Emitted == 0 || st.Emitted >= st.Records || first < 0 || last >= 300000 {
		t.Fatalf("window: %+v, arrivals %v..%v ms", st, first, last)
	}
	// The same count, computed from the native core.
	want := 0
	tracefmt.ParseFile(mooncake.New(), src.Path, 0, func(r *abi.TraceRequest) error {
		if *r.ArrivalMs >= 300000 && *r.ArrivalMs < 900000 {
			want++
		}
		return nil
	})
	if st.Emitted != want {
		t.Fatalf("window kept %d, native count %d", st.Emitted, want)
	}
}

func TestCapabilitiesAreEnforced(t *testing.T) {
	h := builtinHost(t)
	p, err := h.Parser("weka_public_dataset")
	if err != nil {
		t.Fatal(err)
	}
	dir, requests := tracefixture.WEKADir(t, 9, 7)
	src := wasmhost.Source{Path: dir}
	emit := func(*wasmhost.TraceRequest) error { return nil }
	st, err := p.Parse(context.Background(), src, wasmhost.ParseOptions{ScaleFactor: 1}, emit)
	if err != nil || st.Files != 9 || st.Records != requests {
		t.Fatalf("generated weka directory: %+v, %v; want 9 files, %d records", st, err, requests)
	}
	// WEKA takes a range and a scale factor: the module keeps the turns of the window on every
	// trace's clock, the host shifts and halves their times.
	checkWindow := func(t *testing.T, src wasmhost.Source, endSeconds float64, total int) {
		t.Helper()
		end := endSeconds
		var maxArrival, maxDelay float64
		st, err := p.Parse(context.Background(), src, wasmhost.ParseOptions{EndSeconds: &end, ScaleFactor: 2}, func(r *wasmhost.TraceRequest) error {
			if r.RecordedMs >= endSeconds*1000 && r.Subagent == nil {
				t.Fatalf("a parent turn recorded at %v ms is outside [0, %v s)", r.RecordedMs, endSeconds)
			}
			if r.ArrivalMs != nil {
				maxArrival = max(maxArrival, *r.ArrivalMs)
			}
			if r.DelayMs != nil {
				maxDelay = max(maxDelay, *r.DelayMs)
			}
			return nil
		})
		if err != nil || st.Records == 0 || st.Records >= total || st.Emitted != st.Records || maxArrival >= endSeconds*500 || maxDelay >= endSeconds*500 {
			t.Fatalf("weka first %v s at scale 2: %+v, %v, max arrival %v ms, max delay %v ms", endSeconds, st, err, maxArrival, maxDelay)
		}
	}
	checkWindow(t, src, 5, requests)
	t.Run("real weka directory", func(t *testing.T) {
		real := wasmhost.Source{Path: filepath.Join(sharedTraces(t), "weka", "kv-cache-tester")}
		st, err := p.Parse(context.Background(), real, wasmhost.ParseOptions{ScaleFactor: 1}, emit)
		if err != nil || st.Files != 124 || st.Records != 1460+110 {
			t.Fatalf("weka directory: %+v, %v", st, err)
		}
		checkWindow(t, real, 60, 1460+110)
	})
	m, _ := h.Parser("mooncake_trace")
	moon := tracefixture.WriteFile(t, "trace.jsonl", tracefixture.MooncakeJSONL(tracefixture.Mooncake(200, 60000, 3)))
	end := 10.0
	for _, bad := range []wasmhost.ParseOptions{{StartSeconds: -1}, {StartSeconds: 10, EndSeconds: &end}, {ScaleFactor: -2}} {
		if _, err := m.Parse(context.Background(), wasmhost.Source{Path: moon}, bad, emit); err == nil {
			t.Errorf("options %+v accepted", bad)
		}
	}
}

func TestBadInputNamesFileLineAndFieldAndHostRecovers(t *testing.T) {
	h := newHost(t, wasmhost.Config{BuiltinDir: wasmtest.BuiltinDir(t), PoolSize: 1})
	p, _ := h.Parser("mooncake_trace")
	bad := writeFile(t, "bad.jsonl", "{\"timestamp\":0,\"input_length\":5}\n{\"timestamp\":1,\"input_length\":\"x\"}\n")
	_, err := p.Parse(context.Background(), wasmhost.Source{Path: bad}, wasmhost.ParseOptions{}, func(*wasmhost.TraceRequest) error { return nil })
	if err == nil || !strings.Contains(err.Error(), `bad.jsonl: mooncake_trace: line 2: field "input_length": expected an integer`) || !wasmhost.IsGuestError(err) {
		t.Fatalf("error %v", err)
	}
	good := writeFile(t, "good.jsonl", "{\"timestamp\":0,\"input_length\":5}\n")
	n := 0
	if _, err := p.Parse(context.Background(), wasmhost.Source{Path: good}, wasmhost.ParseOptions{}, func(*wasmhost.TraceRequest) error { n++; return nil }); err != nil || n != 1 {
		t.Fatalf("after an error the pool must hand out a working instance: %d records, %v", n, err)
	}
}

// TestWASMCalculatorsMatchTheNativeOnes: the simulator's built-in calculators (the latency
// core, run natively) and the same calculators run as WASM modules through the simulator's
// resolver give bit-identical schedules: with every latency flag set (each std-dev included),
// load factors from an idle server to past max-num-seqs (max-num-seqs 1 included), local and
// remote prefill, and any seed. The flags come from latency.DurationFlags, so a new flag is
// covered without touching this test.
func TestWASMCalculatorsMatchTheNativeOnes(t *testing.T) {
	sims := &inferencesim.WASMCalculators{Dirs: inferencesim.ModuleDirs{Builtin: wasmtest.BuiltinDir(t), Cache: wasmtest.CacheDir(t)}}
	t.Cleanup(func() { sims.Close(context.Background()) })
	var cfg latency.Config
	for i, f := range latency.DurationFlags {
		mean := time.Duration(i+1) * 1700 * time.Microsecond
		if strings.HasSuffix(f.Name, "-per-token") {
			mean = time.Duration(i+1) * 1300 * time.Nanosecond
		}
		*f.Field(&cfg) = mean
	}
	// Each std-dev at its bound (30% of its mean), plus odd nanoseconds.
	cfg.TimeToFirstTokenStdDev = cfg.TimeToFirstToken*3/10 - 7
	cfg.InterTokenLatencyStdDev = cfg.InterTokenLatency*3/10 - 3
	cfg.KVCacheTransferLatencyStdDev = cfg.KVCacheTransferLatency*3/10 - 1
	for _, f := range latency.DurationFlags {
		if *f.Field(&cfg) == 0 {
			t.Fatalf("flag %s is not set: the test must cover every latency flag", f.Name)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, factor := range []float64{1, 1.5, 3} {
		cfg.TimeFactorUnderLoad = factor
		for _, name := range []string{latency.NameConstant, latency.NamePerToken} {
			native, err := latency.New(name, cfg)
			if err != nil {
				t.Fatal(err)
			}
			module, err := sims.Resolve("wasm:"+name, cfg)
			if err != nil {
				t.Fatal(err)
			}
			var ng, mg []time.Duration
			for i := 0; i < 400; i++ {
				in := latency.Input{PromptTokens: rng.IntN(8000), OutputTokens: rng.IntN(300), RunningRequests: rng.IntN(10),
					MaxNumSeqs: 1 + rng.IntN(8), RemotePrefill: rng.IntN(4) == 0, Rand: rng.Uint64()}
				if i%5 == 0 {
					in.MaxNumSeqs, in.RunningRequests = 1, rng.IntN(2) // the load factor at --max-num-seqs 1
				}
				in.CachedPromptTokens = rng.IntN(in.PromptTokens + 1)
				nt, g1, err := native.Schedule(in, ng)
				if err != nil {
					t.Fatal(err)
				}
				mt, g2, err := module.Schedule(in, mg)
				if err != nil {
					t.Fatal(err)
				}
				ng, mg = g1, g2
				if nt != mt || !slices.Equal(ng, mg) {
					t.Fatalf("%s factor %v %+v: native ttft %v gaps %v, module ttft %v gaps %v", name, factor, in, nt, ng, mt, mg)
				}
			}
		}
	}
	h := builtinHost(t)
	if _, err := h.Calculator("constant", []byte(`{"time-to-first-token":"10ms","time-to-first-token-std-dev":"9ms"}`)); err == nil || !strings.Contains(err.Error(), "exceeds 30%") {
		t.Fatalf("bad configuration: %v", err)
	}
	if _, err := h.Calculator("linear", nil); !errors.Is(err, wasmhost.ErrUnknownModule) {
		t.Fatalf("unknown calculator: %v", err)
	}
}

func TestExampleUserModule(t *testing.T) {
	examples := wasmtest.ExampleDir(t)
	h := newHost(t, wasmhost.Config{BuiltinDir: wasmtest.BuiltinDir(t), ModuleDirs: []string{examples}})
	var info wasmhost.ModuleInfo
	for _, m := range h.Modules() {
		if m.Name == "simple_csv_trace" {
			info = m
		}
	}
	if info.Builtin || info.Kind != abi.KindTraceParser || !info.Capabilities[abi.CapabilityTraceRange] || !info.Capabilities[abi.CapabilityScaleFactor] {
		t.Fatalf("example module info %+v", info)
	}
	p, err := h.Parser("simple_csv_trace")
	if err != nil {
		t.Fatal(err)
	}
	sample := filepath.Join(wasmtest.RepoRoot(t), "wasm-modules/examples/simple_csv_trace/testdata/sample.csv")
	var got []string
	_, err = p.Parse(context.Background(), wasmhost.Source{Path: sample}, wasmhost.ParseOptions{ScaleFactor: 2}, func(r *wasmhost.TraceRequest) error {
		got = append(got, strings.Join([]string{itoa(r.Line), ftoa(*r.ArrivalMs), ftoa(r.RecordedMs), itoa(int64(r.InputTokens)), itoa(int64(r.OutputTokens))}, " "))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"2 0 0 120 30", "3 0 0 64 8", "5 750 1500 4096 1", "6 1000 2000 7 0"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("records %q, want %q", got, want)
	}
	bad := writeFile(t, "bad.csv", "1,2,3\n\n4,x,6\n")
	_, err = p.Parse(context.Background(), wasmhost.Source{Path: bad}, wasmhost.ParseOptions{}, func(*wasmhost.TraceRequest) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "bad.csv: simple_csv_trace: line 3: expected arrival_ms,input_tokens,output_tokens") {
		t.Fatalf("error %v", err)
	}
	// The same input through every chunking the host might use gives the same records.
	big := strings.Repeat("7,1,1\n", 100000)
	path := writeFile(t, "big.csv", big)
	n := 0
	if _, err := p.Parse(context.Background(), wasmhost.Source{Path: path}, wasmhost.ParseOptions{}, func(*wasmhost.TraceRequest) error { n++; return nil }); err != nil || n != 100000 {
		t.Fatalf("big input: %d records, %v", n, err)
	}
}

func TestMisbehavingModules(t *testing.T) {
	ctx := context.Background()
	current := int(abi.Version)
	t.Run("ABI mismatch is refused at load", func(t *testing.T) {
		// A module of the next version, and one of version 1 (before lens_step_time).
		for _, v := range []int{int(abi.Version) + 1, 1} {
			dir := userModuleDir(t, watModule{name: "other", abiVersion: v})
			_, err := wasmhost.New(ctx, wasmhost.Config{ModuleDirs: []string{dir}})
			if !errors.Is(err, wasmhost.ErrABIMismatch) || !strings.Contains(err.Error(), "module has ABI version "+strconv.Itoa(v)) {
				t.Fatalf("version %d: got %v", v, err)
			}
		}
	})
	t.Run("missing export is refused at load", func(t *testing.T) {
		dir := userModuleDir(t, watModule{name: "partial", abiVersion: current, omitEnd: true})
		_, err := wasmhost.New(ctx, wasmhost.Config{ModuleDirs: []string{dir}})
		if !errors.Is(err, wasmhost.ErrBadModule) || !strings.Contains(err.Error(), "lens_parse_end") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("sha256 mismatch is refused at load", func(t *testing.T) {
		dir := userModuleDir(t, watModule{name: "tampered", abiVersion: current})
		f, _ := os.OpenFile(filepath.Join(dir, "tampered.wasm"), os.O_APPEND|os.O_WRONLY, 0)
		f.Write([]byte{0})
		f.Close()
		_, err := wasmhost.New(ctx, wasmhost.Config{ModuleDirs: []string{dir}})
		if !errors.Is(err, wasmhost.ErrChecksum) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("name clash with a built-in is refused", func(t *testing.T) {
		dir := userModuleDir(t, watModule{name: "mooncake_trace", abiVersion: current})
		_, err := wasmhost.New(ctx, wasmhost.Config{BuiltinDir: wasmtest.BuiltinDir(t), ModuleDirs: []string{dir}, CacheDir: wasmtest.CacheDir(t)})
		if err == nil || !strings.Contains(err.Error(), `module name "mooncake_trace" is used by both`) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("a trap discards the instance", func(t *testing.T) {
		dir := userModuleDir(t, watModule{name: "trap", abiVersion: current, feedBody: "unreachable"})
		h := newHost(t, wasmhost.Config{ModuleDirs: []string{dir}, PoolSize: 1})
		p, _ := h.Parser("trap")
		in := writeFile(t, "x", "data")
		for i := 0; i < 3; i++ {
			_, err := p.Parse(ctx, wasmhost.Source{Path: in}, wasmhost.ParseOptions{}, func(*wasmhost.TraceRequest) error { return nil })
			if err == nil || !strings.Contains(err.Error(), "trapped (instance discarded)") || !strings.Contains(err.Error(), "unreachable") {
				t.Fatalf("call %d: %v", i, err)
			}
		}
	})
	t.Run("a user module that spins is stopped by the call timeout", func(t *testing.T) {
		dir := userModuleDir(t, watModule{name: "spin", abiVersion: current, feedBody: "(loop $forever (br $forever)) (i64.const 0)"})
		h := newHost(t, wasmhost.Config{ModuleDirs: []string{dir}, PoolSize: 1, CallTimeout: 200 * time.Millisecond})
		p, _ := h.Parser("spin")
		in := writeFile(t, "x", "data")
		within(t, 5*time.Second, func() {
			start := time.Now()
			_, err := p.Parse(ctx, wasmhost.Source{Path: in}, wasmhost.ParseOptions{}, func(*wasmhost.TraceRequest) error { return nil })
			if err == nil || !strings.Contains(err.Error(), "trapped") || time.Since(start) < 200*time.Millisecond {
				t.Errorf("got %v after %v", err, time.Since(start))
			}
		})
	})
}

func TestMemoryCap(t *testing.T) {
	// 256 pages (16 MiB): room for a Go guest, its 256 KiB chunks and one trace, too little
	// for one 24 MB trace (the WEKA parser holds one trace at a time). 10 MiB is too tight
	// for a Go guest decoding JSON: its GC lets the heap reach about 2x live first.
	h := newHost(t, wasmhost.Config{BuiltinDir: wasmtest.BuiltinDir(t), MemoryLimitPages: 256, PoolSize: 1})
	req := `{"t": 1.0, "type": "n", "model": "m", "in": 640, "out": 3, "hash_ids": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}`
	var huge strings.Builder
	huge.WriteString(`{"id": "huge", "models": ["m"], "block_size": 64, "hash_id_scope": "local", "requests": [` + req)
	for huge.Len() < 24<<20 {
		huge.WriteString(", " + req)
	}
	huge.WriteString("]}\n")
	big := writeFile(t, "huge.json", huge.String())
	p, _ := h.Parser("weka_public_dataset")
	_, err := p.Parse(context.Background(), wasmhost.Source{Path: big}, wasmhost.ParseOptions{}, func(*wasmhost.TraceRequest) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "trapped") {
		t.Fatalf("a %d-byte trace under a 16 MiB cap: %v", huge.Len(), err)
	}
	// The host stays usable: a trace parses on a fresh instance, and so does a JSONL stream
	// of many traces larger than the cap, because it holds one trace at a time.
	dir, requests := tracefixture.WEKADir(t, 8, 150) // about 2.6 MB of traces
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	checkStaysUsable(t, p, files, requests, 8)
	t.Run("real traces", func(t *testing.T) {
		real, _ := filepath.Glob(filepath.Join(sharedTraces(t), "weka", "kv-cache-tester", "*.json"))
		// A fresh host: one instance's heap after the generated stream is not the point here.
		h := newHost(t, wasmhost.Config{BuiltinDir: wasmtest.BuiltinDir(t), MemoryLimitPages: 256, PoolSize: 1})
		p, _ := h.Parser("weka_public_dataset")
		checkStaysUsable(t, p, real, 1460+110, 3)
	})
}

// checkStaysUsable parses files[0] alone, then a JSONL stream of every file repeated times
// (more than the 16 MiB cap), which must give repeats x requests records.
func checkStaysUsable(t *testing.T, p *wasmhost.Parser, files []string, requests, repeats int) {
	t.Helper()
	sort.Strings(files)
	n := 0
	if _, err := p.Parse(context.Background(), wasmhost.Source{Path: files[0]}, wasmhost.ParseOptions{}, func(*wasmhost.TraceRequest) error { n++; return nil }); err != nil || n == 0 {
		t.Fatalf("after the trap: %d records, %v", n, err)
	}
	var all bytes.Buffer
	for range repeats {
		for _, f := range files {
			b, _ := os.ReadFile(f)
			all.Write(bytes.TrimSpace(b))
			all.WriteByte('\n')
		}
	}
	if all.Len() <= 16<<20 {
		t.Fatalf("the stream is %d bytes, not more than the cap", all.Len())
	}
	n = 0
	stream := writeFile(t, "all.jsonl", all.String())
	if _, err := p.Parse(context.Background(), wasmhost.Source{Path: stream}, wasmhost.ParseOptions{}, func(*wasmhost.TraceRequest) error { n++; return nil }); err != nil || n != repeats*requests {
		t.Fatalf("JSONL stream of %d bytes under a 16 MiB cap: %d records, %v; want %d", all.Len(), n, err, repeats*requests)
	}
}

func itoa(v int64) string   { return strconv.FormatInt(v, 10) }
func ftoa(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
