package simulationapi_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/functions/simulationapi"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/wasmhost/wasmtest"
	"github.com/lensfn/lensfn/tests/tracefixture"
)

// timelineThroughWASM runs the real function build over a data directory holding files (name
// to content, under datasets/): the built-in parser modules read the dataset's trace, and the
// dataset's timeline comes back with the backends' catalogue.
func timelineThroughWASM(t *testing.T, files map[string][]byte, dataset string) simulationapi.Timeline {
	t.Helper()
	dataDir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dataDir, "datasets"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dataDir, "datasets", name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := fntest.Config(t, fntest.Env(t, map[string]string{"LENS_DATA_DIR": dataDir,
		"LENS_BUILTIN_MODULE_DIR": wasmtest.BuiltinDir(t), "LENS_CACHE_DIR": wasmtest.CacheDir(t)}))
	srv := serveBuilt(t, cfg, simulationapi.Build)
	fntest.WaitWarm(t, srv.URL)

	var tl simulationapi.Timeline
	if code := call(t, "GET", srv.URL+"/api/simulation/trace-datasets/"+dataset+"/timeline", "", &tl); code != 200 {
		t.Fatal(code)
	}
	sum := 0
	for _, b := range tl.Bins {
		sum += b.RequestCount
	}
	if sum != tl.RequestCount {
		t.Fatalf("bins hold %d of %d requests", sum, tl.RequestCount)
	}
	var backends struct {
		Backends []simulationapi.Backend `json:"backends"`
	}
	call(t, "GET", srv.URL+"/api/simulation/backends", "", &backends)
	for _, b := range backends.Backends {
		if b.Name == "trace-replayer" {
			if _, ok := b.Capabilities.TraceFormatCapabilities["mooncake_trace"]; !ok {
				t.Fatalf("mooncake_trace not listed from the modules: %+v", b.Capabilities)
			}
		}
	}
	return tl
}

// A generated mooncake trace (tests/tracefixture), registered as a local dataset, is read by
// the built-in parser module.
func TestTimelineThroughTheWASMParser(t *testing.T) {
	rows := tracefixture.Mooncake(2000, 600000, 5)
	trace := tracefixture.MooncakeJSONL(rows)
	tl := timelineThroughWASM(t, map[string][]byte{"generated.jsonl": trace,
		"generated.dataset.json": []byte(`{"name":"generated-mooncake","filename":"generated.jsonl","scenario":"chat","trace_format":"mooncake_trace"}`)},
		"generated-mooncake")
	last := float64(rows[len(rows)-1].TimestampMs) / 1000
	if tl.RequestCount != len(rows) || tl.DurationSeconds != last || len(tl.Bins) == 0 || tl.SourceSizeBytes != int64(len(trace)) {
		t.Fatalf("request_count %d duration %v bins %d size %d", tl.RequestCount, tl.DurationSeconds, len(tl.Bins), tl.SourceSizeBytes)
	}
}

// The real Mooncake conversation trace, in addition, through the catalogue's dataset.
func TestTimelineThroughTheWASMParserOnTheRealTrace(t *testing.T) {
	tl := timelineThroughWASM(t, map[string][]byte{"conversation_trace.jsonl": realTrace(t, "mooncake/conversation_trace.jsonl")}, "mooncake-conversation")
	if tl.RequestCount != 12031 || tl.DurationSeconds != 3536.999 || len(tl.Bins) != 800 || tl.SourceSizeBytes != 3029533 {
		t.Fatalf("request_count %d duration %v bins %d size %d", tl.RequestCount, tl.DurationSeconds, len(tl.Bins), tl.SourceSizeBytes)
	}
}

// TestUserModulesAppearInTheCatalogue: a parser dropped into LENS_MODULE_DIR is listed like a
// built-in, with the capabilities its descriptor declares.
func TestUserModulesAppearInTheCatalogue(t *testing.T) {
	dataDir := t.TempDir()
	env := fntest.Env(t, map[string]string{"LENS_DATA_DIR": dataDir,
		"LENS_BUILTIN_MODULE_DIR": wasmtest.BuiltinDir(t), "LENS_CACHE_DIR": wasmtest.CacheDir(t),
		"LENS_MODULE_DIR": wasmtest.ExampleDir(t)})
	// An operator registers a trace in the user module's format as a local dataset.
	datasets := filepath.Join(dataDir, "datasets")
	_ = os.MkdirAll(datasets, 0o755)
	trace := "# arrival_ms,input_tokens,output_tokens\n0,100,10\n500,200,20\n1500,300,30\n3000,400,40\n"
	for name, body := range map[string]string{"lab.csv": trace,
		"lab.dataset.json": `{"name":"lab-trace","filename":"lab.csv","scenario":"chat","trace_format":"simple_csv_trace","description":"ours"}`,
		"bad.dataset.json": `{"name":"mooncake-arxiv","filename":"x","scenario":"chat","trace_format":"mooncake_trace"}`} {
		if err := os.WriteFile(filepath.Join(datasets, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := fntest.Config(t, env)
	srv := serveBuilt(t, cfg, simulationapi.Build)
	fntest.WaitWarm(t, srv.URL)
	var backends struct {
		Backends []simulationapi.Backend `json:"backends"`
	}
	call(t, "GET", srv.URL+"/api/simulation/backends", "", &backends)
	for _, b := range backends.Backends {
		if b.Name != "trace-replayer" {
			continue
		}
		if _, ok := b.Capabilities.TraceFormatCapabilities["simple_csv_trace"]; !ok || len(b.Capabilities.TraceFormats) != 6 {
			t.Fatalf("the user module is not listed: %v", b.Capabilities.TraceFormats)
		}
	}
	var list struct {
		Datasets []simulationapi.DatasetView `json:"datasets"`
	}
	call(t, "GET", srv.URL+"/api/simulation/trace-datasets", "", &list)
	var lab *simulationapi.DatasetView
	for i, d := range list.Datasets {
		if d.Name == "lab-trace" {
			lab = &list.Datasets[i]
		}
	}
	if lab == nil || !lab.Downloaded || strings.Join(lab.SupportedBackends, ",") != "trace-replayer" || len(list.Datasets) != len(simulationapi.Datasets)+1 {
		t.Fatalf("local dataset: %+v (%d datasets)", lab, len(list.Datasets))
	}
	var tl simulationapi.Timeline
	if code := call(t, "GET", srv.URL+"/api/simulation/trace-datasets/lab-trace/timeline?bins=50", "", &tl); code != 200 ||
		tl.RequestCount != 4 || tl.DurationSeconds != 3 {
		t.Fatalf("timeline through the user module: %d %+v", code, tl)
	}
}

// serveBuilt serves the function build builds over cfg until the test ends, with the default
// client authorised.
func serveBuilt(t *testing.T, cfg fn.Config, build fn.Builder) *httptest.Server {
	t.Helper()
	s, err := fn.NewServer(context.Background(), cfg, simulationapi.Name, build)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	srv := httptest.NewServer(s.Handler)
	t.Cleanup(srv.Close)
	fntest.AuthorizeDefaultClient(t, s)
	return srv
}
