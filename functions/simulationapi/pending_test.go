package simulationapi_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/functions/simulationapi"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/wasmhost"
	"github.com/lensfn/lensfn/runtime/wasmhost/wasmtest"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/baseten"
)

// make run starts the stack before the Baseten parser is built (its manifest lists
// baseten_trace as pending). Until the build puts it in place, what needs it answers 503
// `starting` naming it ("building ..."), never an unknown format; the listings still show the
// format, with its state; /readyz lists it. Once the module file and a manifest pinning it
// are in place, the same requests work.
func TestBasetenRequestsBeforeTheModuleIsBuilt(t *testing.T) {
	src := wasmtest.BuiltinDir(t)
	full, err := wasmhost.ReadManifest(src)
	if err != nil {
		t.Fatal(err)
	}
	modules := t.TempDir()
	light := wasmhost.Manifest{ManifestVersion: 1}
	var basetenEntry wasmhost.ManifestEntry
	for _, e := range full.Modules {
		if e.Name == "baseten_trace" {
			basetenEntry = e
			continue
		}
		copyFile(t, filepath.Join(src, e.File), filepath.Join(modules, e.File))
		light.Modules = append(light.Modules, e)
	}
	light.Pending = []wasmhost.PendingEntry{{Name: "baseten_trace", Kind: "trace-parser"}}
	putManifest(t, modules, light)

	dataDir := t.TempDir()
	datasets := filepath.Join(dataDir, "datasets")
	if err := os.MkdirAll(datasets, 0o755); err != nil {
		t.Fatal(err)
	}
	sample, err := baseten.EncodeSample(baseten.Sample())
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"lab.parquet": sample,
		"lab.dataset.json": []byte(`{"name":"lab-baseten","filename":"lab.parquet","scenario":"chat","trace_format":"baseten_trace"}`)} {
		if err := os.WriteFile(filepath.Join(datasets, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := fntest.Config(t, fntest.Env(t, map[string]string{"LENS_DATA_DIR": dataDir,
		"LENS_BUILTIN_MODULE_DIR": modules, "LENS_CACHE_DIR": wasmtest.CacheDir(t)}))
	srv := serveBuilt(t, cfg, simulationapi.Build)

	const detail = "building WASM module baseten_trace, first start only; try again shortly"
	timeline := srv.URL + "/api/simulation/trace-datasets/lab-baseten/timeline?bins=50"
	create := `{"scenario":"chat","endpoint_url":"http://127.0.0.1:1/v1","model_name":"fake-model","trace_dataset":"lab-baseten","scale_factor":2,"duration_seconds":10}`
	for _, req := range []struct{ method, url, body string }{{"GET", timeline, ""}, {"POST", srv.URL + "/api/simulation/tasks", create}} {
		resp, body := send(t, req.method, req.url, req.body)
		var p struct {
			Detail string `json:"detail"`
			Code   string `json:"code"`
		}
		_ = json.Unmarshal([]byte(body), &p)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Content-Type") != "application/problem+json" ||
			resp.Header.Get("Retry-After") == "" || p.Code != "starting" || !strings.Contains(p.Detail, detail) {
			t.Fatalf("%s %s before baseten_trace is built: %d Retry-After %q %s", req.method, req.url, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
	if resp, body := send(t, "GET", srv.URL+"/readyz", ""); resp.StatusCode != http.StatusOK ||
		!strings.Contains(body, "warming: building WASM module baseten_trace\n") {
		t.Fatalf("readyz while baseten_trace is being built: %d %q", resp.StatusCode, body)
	}
	replayer := func() simulationapi.Backend {
		var backends struct {
			Backends []simulationapi.Backend `json:"backends"`
		}
		call(t, "GET", srv.URL+"/api/simulation/backends", "", &backends)
		for _, b := range backends.Backends {
			if b.Name == "trace-replayer" {
				return b
			}
		}
		t.Fatal("no trace-replayer backend")
		return simulationapi.Backend{}
	}
	if b := replayer(); !slices.Contains(b.Capabilities.TraceFormats, "baseten_trace") ||
		b.Capabilities.TraceFormatCapabilities["baseten_trace"].State != "building" {
		t.Fatalf("the listing while baseten_trace is built: %v %+v", b.Capabilities.TraceFormats, b.Capabilities.TraceFormatCapabilities["baseten_trace"])
	}
	var list struct {
		Datasets []simulationapi.DatasetView `json:"datasets"`
	}
	call(t, "GET", srv.URL+"/api/simulation/trace-datasets", "", &list)
	for _, d := range list.Datasets {
		if d.Name == "lab-baseten" && !slices.Contains(d.SupportedBackends, "trace-replayer") {
			t.Fatalf("the Baseten dataset while its parser is built: %+v", d)
		}
	}

	// The background build ends as build.sh ends it: the module, then the manifest.
	copyFile(t, filepath.Join(src, basetenEntry.File), filepath.Join(modules, basetenEntry.File))
	putManifest(t, modules, wasmhost.Manifest{ManifestVersion: 1, Modules: append(light.Modules, basetenEntry)})
	fntest.WaitWarm(t, srv.URL)
	var tl simulationapi.Timeline
	if code := call(t, "GET", timeline, "", &tl); code != http.StatusOK || tl.RequestCount != len(baseten.Sample()) {
		t.Fatalf("timeline once baseten_trace is built: %d %+v", code, tl)
	}
	if caps := replayer().Capabilities.TraceFormatCapabilities["baseten_trace"]; caps.State != "" || !caps.SupportsScaleFactor {
		t.Fatalf("baseten_trace once built: %+v", caps)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to+".tmp", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(to+".tmp", to); err != nil {
		t.Fatal(err)
	}
}

// putManifest replaces dir's manifest atomically, as build.sh does.
func putManifest(t *testing.T, dir string, m wasmhost.Manifest) {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json.tmp"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "manifest.json.tmp"), filepath.Join(dir, wasmhost.ManifestFile)); err != nil {
		t.Fatal(err)
	}
}
