package simulationapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lensfn/lensfn/functions/simulationapi"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
)

// fakeParsers reads one arrival per non-empty line: the line's leading number, in ms.
type fakeParsers struct{ parses atomic.Int32 }

func (f *fakeParsers) Formats() []simulationapi.TraceFormat {
	return []simulationapi.TraceFormat{
		{Name: "bailian_trace", SupportsTraceRange: true, SupportsScaleFactor: true},
		{Name: "mooncake_trace", SupportsTraceRange: true, SupportsScaleFactor: true},
		{Name: "weka_public_dataset", SupportsTraceRange: true, SupportsScaleFactor: true, TraceRange: "turns: on each trace's own clock"},
	}
}

func (f *fakeParsers) Arrivals(_ context.Context, _, path string, emit func(float64)) error {
	f.parses.Add(1)
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var ms float64
		if err := json.Unmarshal([]byte(strings.Fields(line)[0]), &ms); err != nil {
			return err
		}
		emit(ms / 1000)
	}
	return nil
}

type harness struct {
	server  *fn.Server
	url     string
	dataDir string
	parsers *fakeParsers
	mirror  *mirror
	token   string // every scope; http.DefaultClient sends it
}

// mirror serves files for LENS_DATASET_MIRROR and counts requests per file.
type mirror struct {
	mu    sync.Mutex
	files map[string][]byte
	hits  map[string]int
	gate  chan struct{} // when set, requests wait for it
}

func (m *mirror) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if m.gate != nil {
		<-m.gate
	}
	m.mu.Lock()
	body, ok := m.files[strings.TrimPrefix(r.URL.Path, "/")]
	m.hits[r.URL.Path]++
	m.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write(body)
}

func newHarness(t testing.TB, extraEnv map[string]string) *harness {
	t.Helper()
	h := &harness{dataDir: t.TempDir(), parsers: &fakeParsers{}, mirror: &mirror{files: map[string][]byte{}, hits: map[string]int{}}}
	mirrorSrv := httptest.NewServer(h.mirror)
	t.Cleanup(mirrorSrv.Close)
	env := fntest.Env(t, map[string]string{"LENS_SECRET_KEY": testSecretKey, "LENS_DATA_DIR": h.dataDir,
		"LENS_DATASET_MIRROR": mirrorSrv.URL})
	for k, v := range extraEnv {
		env[k] = v
	}
	cfg := fntest.Config(t, env)
	s, err := fn.NewServer(context.Background(), cfg, simulationapi.Name, func(_ context.Context, d fn.Deps) (*fn.Function, error) {
		f, _, err := simulationapi.New(d, h.parsers)
		return f, err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	srv := httptest.NewServer(s.Handler)
	t.Cleanup(srv.Close)
	h.url, h.server = srv.URL, s
	h.token = fntest.AuthorizeDefaultClient(t, s)
	return h
}

func call(t *testing.T, method, url, body string, out any) int {
	t.Helper()
	resp, raw := send(t, method, url, body)
	if resp.StatusCode >= 400 && resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("%s %s: error %d without problem+json: %s", method, url, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(raw), out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, url, err, raw)
		}
	}
	return resp.StatusCode
}

func TestBackendsAndScenariosComeFromTheParserModules(t *testing.T) {
	h := newHarness(t, nil)
	var backends struct {
		Backends []simulationapi.Backend `json:"backends"`
	}
	if code := call(t, "GET", h.url+"/api/simulation/backends", "", &backends); code != 200 {
		t.Fatal(code)
	}
	if len(backends.Backends) != 2 {
		t.Fatalf("%+v", backends)
	}
	var replayer, aiperf simulationapi.Backend
	for _, b := range backends.Backends {
		switch b.Name {
		case "trace-replayer":
			replayer = b
		case "aiperf":
			aiperf = b
		}
	}
	caps := replayer.Capabilities
	if !replayer.Available || strings.Join(caps.TraceFormats, ",") != "bailian_trace,mooncake_trace,weka_public_dataset" ||
		!caps.TraceFormatCapabilities["weka_public_dataset"].SupportsTraceRange ||
		!caps.TraceFormatCapabilities["mooncake_trace"].SupportsScaleFactor ||
		strings.Join(caps.ScaleFactorTraceFormats, ",") != "bailian_trace,mooncake_trace,weka_public_dataset" {
		t.Fatalf("replayer capabilities not from the parsers: %+v", replayer)
	}
	// Each format says what a range selects: its parser's words, or the host's rule.
	if !strings.HasPrefix(caps.TraceFormatCapabilities["weka_public_dataset"].TraceRange, "turns:") ||
		caps.TraceFormatCapabilities["mooncake_trace"].TraceRange != simulationapi.DefaultTraceRange ||
		aiperf.Capabilities.TraceFormatCapabilities["weka_public_dataset"].TraceRange != "" ||
		!strings.Contains(aiperf.Capabilities.TraceFormatCapabilities["mooncake_trace"].TraceRange, "inclusive") ||
		!slices.Contains(caps.AdvancedOptions, "subagent_timing") {
		t.Fatalf("trace range descriptions: %+v / %+v", caps.TraceFormatCapabilities, aiperf.Capabilities.TraceFormatCapabilities)
	}
	if _, err := os.Stat("/usr/local/bin/aiperf"); err != nil && aiperf.Available {
		t.Fatalf("aiperf available without the command: %+v", aiperf)
	}
	if !aiperf.Available && (aiperf.UnavailableReason == nil || *aiperf.UnavailableReason == "") {
		t.Fatal("an unavailable backend must say why")
	}
	var scenarios struct {
		Scenarios []simulationapi.ScenarioView `json:"scenarios"`
	}
	call(t, "GET", h.url+"/api/simulation/scenarios", "", &scenarios)
	names := []string{}
	for _, s := range scenarios.Scenarios {
		names = append(names, s.Name+"="+strings.Join(s.SupportedBackends, "+"))
	}
	if got := strings.Join(names, " "); got != "chat=aiperf+trace-replayer api-calling=aiperf+trace-replayer coding=aiperf+trace-replayer" {
		t.Fatalf("scenarios %s", got)
	}
}

func TestDatasetCatalogue(t *testing.T) {
	h := newHarness(t, nil)
	var out struct {
		DataDir  string                      `json:"data_dir"`
		Datasets []simulationapi.DatasetView `json:"datasets"`
	}
	call(t, "GET", h.url+"/api/simulation/trace-datasets", "", &out)
	if out.DataDir != "datasets" { // relative: responses never show the absolute data dir
		t.Fatalf("data_dir %q", out.DataDir)
	}
	byName := map[string]simulationapi.DatasetView{}
	for _, d := range out.Datasets {
		byName[d.Name] = d
		if d.Name == simulationapi.SampleDatasetName {
			continue // generated, not downloaded: checked below
		}
		if len(d.SHA256) != 64 || d.License == "" || d.URL == "" || d.Scenario == "" || d.Downloaded {
			t.Errorf("incomplete entry %+v", d)
		}
	}
	for _, want := range []string{"mooncake-arxiv", "mooncake-conversation", "mooncake-toolagent", "mooncake-synthetic",
		"bailian-trace-a", "bailian-trace-b", "bailian-coder", "bailian-thinking", "burstgpt-conversation", "burstgpt-api",
		"weka-kv-cache-tester"} {
		if _, ok := byName[want]; !ok {
			t.Errorf("catalogue lacks %s", want)
		}
	}
	conv := byName["mooncake-conversation"]
	if conv.SHA256 != "b8cbb061a85206d729d91cdc2981f43c9e0d99209dce588d3af5f7934408b9df" || conv.TraceFormat != "mooncake_trace" ||
		strings.Join(conv.SupportedBackends, ",") != "aiperf,trace-replayer" {
		t.Fatalf("%+v", conv)
	}
	// burst_gpt_trace has no parser in this harness, so only aiperf can replay it.
	if strings.Join(byName["burstgpt-api"].SupportedBackends, ",") != "aiperf" || byName["weka-kv-cache-tester"].Files != 124 {
		t.Fatalf("%+v / %+v", byName["burstgpt-api"], byName["weka-kv-cache-tester"])
	}
}

const testSecretKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

const miniTrace = "0 a\n500 b\n1000 c\n1000 d\n4000 e\n"

func TestDownloadVerifiesDigestAndTimelineBins(t *testing.T) {
	h := newHarness(t, nil)
	// The wrong bytes under the right name: a digest mismatch deletes the file and answers 502
	// (the source is at fault, not the client).
	h.mirror.files["conversation_trace.jsonl"] = []byte(miniTrace)
	var prob map[string]any
	if code := call(t, "POST", h.url+"/api/simulation/trace-datasets/download", `{"dataset":"mooncake-conversation"}`, &prob); code != 502 ||
		!strings.Contains(prob["detail"].(string), "sha256 mismatch") {
		t.Fatalf("%d %v", code, prob)
	}
	entries, _ := os.ReadDir(filepath.Join(h.dataDir, "datasets"))
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "lensfn_sample_chat.jsonl") { // the generated sample is always there
			t.Fatalf("mismatched download left files: %v", entries)
		}
	}
	if code := call(t, "GET", h.url+"/api/simulation/trace-datasets/mooncake-conversation/timeline", "", &prob); code != 409 {
		t.Fatalf("timeline before download: %d", code)
	}
	cases := []struct {
		body string
		code int
	}{
		{`{"dataset":"nope"}`, 400},
		{`{"dataset":"mooncake-conversation","extra":1}`, 422},
		{`{"force":true}`, 422},
		{`not json`, 422},
	}
	for _, tc := range cases {
		if code := call(t, "POST", h.url+"/api/simulation/trace-datasets/download", tc.body, nil); code != tc.code {
			t.Errorf("%s: %d, want %d", tc.body, code, tc.code)
		}
	}
	for _, q := range []string{"?bins=49", "?bins=2001", "?bins=abc"} {
		if code := call(t, "GET", h.url+"/api/simulation/trace-datasets/mooncake-conversation/timeline"+q, "", nil); code != 422 {
			t.Errorf("bins %s: %d", q, code)
		}
	}
	// An unknown dataset's problem lists the known ones, on every route that names one.
	var unknown map[string]any
	if code := call(t, "GET", h.url+"/api/simulation/trace-datasets/unknown/timeline", "", &unknown); code != 404 ||
		!strings.Contains(anyString(unknown["detail"]), `unknown trace dataset "unknown": the known datasets are `) ||
		!strings.Contains(anyString(unknown["detail"]), "mooncake-conversation") {
		t.Errorf("unknown dataset timeline: %d %v", code, unknown)
	}
	if code := call(t, "POST", h.url+"/api/simulation/trace-datasets/download", `{"dataset":"nope"}`, &unknown); code != 400 ||
		!strings.Contains(anyString(unknown["detail"]), "the known datasets are ") || !strings.Contains(anyString(unknown["detail"]), "mooncake-conversation") {
		t.Errorf("unknown dataset download: %d %v", code, unknown)
	}
}

// TestTimelineFromPlacedDataset checks the binning on a file placed in the data dir by hand.
func TestTimelineFromPlacedDataset(t *testing.T) {
	h := newHarness(t, nil)
	dir := filepath.Join(h.dataDir, "datasets")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "conversation_trace.jsonl"), []byte(miniTrace), 0o644); err != nil {
		t.Fatal(err)
	}
	var tl simulationapi.Timeline
	if code := call(t, "GET", h.url+"/api/simulation/trace-datasets/mooncake-conversation/timeline?bins=50", "", &tl); code != 200 {
		t.Fatal(code)
	}
	// The 50 bins asked for, empty ones included, however few requests: width 4s/50 = 0.08s.
	if tl.RequestCount != 5 || tl.DurationSeconds != 4 || len(tl.Bins) != 50 || tl.BinWidthSeconds != 0.08 {
		t.Fatalf("%d bins of %gs: %+v", len(tl.Bins), tl.BinWidthSeconds, tl)
	}
	total, nonEmpty := 0, 0
	for i, b := range tl.Bins {
		total += b.RequestCount
		if b.RequestCount > 0 {
			nonEmpty++
		}
		if i > 0 && b.StartSeconds != tl.Bins[i-1].EndSeconds {
			t.Fatalf("bin %d starts at %g, the previous ends at %g", i, b.StartSeconds, tl.Bins[i-1].EndSeconds)
		}
	}
	if total != 5 || nonEmpty > 5 || tl.Bins[0].StartSeconds != 0 || tl.Bins[49].EndSeconds != 4 || tl.SourceSizeBytes != int64(len(miniTrace)) {
		t.Fatalf("bins hold %d requests in %d bins (%+v)", total, nonEmpty, tl)
	}
	// The default is 800 bins, and the spec's upper bound 2000 is answered whole.
	for q, want := range map[string]int{"": 800, "?bins=2000": 2000} {
		if code := call(t, "GET", h.url+"/api/simulation/trace-datasets/mooncake-conversation/timeline"+q, "", &tl); code != 200 || len(tl.Bins) != want {
			t.Fatalf("bins%s: %d, %d bins, want %d", q, code, len(tl.Bins), want)
		}
	}
	// The index is reused: asking again parses nothing.
	call(t, "GET", h.url+"/api/simulation/trace-datasets/mooncake-conversation/timeline", "", &tl)
	if n := h.parsers.parses.Load(); n != 1 {
		t.Fatalf("parsed %d times", n)
	}
}
