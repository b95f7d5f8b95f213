package simulationapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/functions/simulationapi"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/wasmhost"
	"github.com/lensfn/lensfn/runtime/wasmhost/wasmtest"
)

// On a first start the function serves before its modules are compiled: the routes that need
// no module answer at once, the ones that need a module still compiling answer 503
// problem+json with Retry-After and a detail naming it, /readyz lists it, and once it is
// compiled they work. The compilation is held on a channel, so nothing depends on timing.
func TestModuleRoutesAnswer503WhileTheModuleCompiles(t *testing.T) {
	release := make(chan struct{})
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	cfg := fntest.Config(t, fntest.Env(t, nil))
	srv := serveBuilt(t, cfg, func(ctx context.Context, d fn.Deps) (*fn.Function, error) {
		host, err := wasmhost.OpenBlocked(ctx, wasmhost.Dirs{Builtin: wasmtest.BuiltinDir(t), Cache: wasmtest.CacheDir(t)},
			func(ctx context.Context, name string) {
				if name == "mooncake_trace" {
					select {
					case <-release:
					case <-ctx.Done():
					}
				}
			})
		if err != nil {
			return nil, err
		}
		f, _, err := simulationapi.New(d, simulationapi.NewWASMParsers(host))
		if err != nil {
			return nil, err
		}
		f.Close, f.Warming = host.Close, host.Warming
		return f, nil
	})

	for _, path := range []string{"/backends", "/scenarios", "/trace-datasets", "/tasks"} {
		if code := call(t, "GET", srv.URL+"/api/simulation"+path, "", nil); code != http.StatusOK {
			t.Fatalf("GET %s needs no module but answered %d while one compiles", path, code)
		}
	}
	const detail = "compiling WASM module mooncake_trace, first start only"
	timeline := srv.URL + "/api/simulation/trace-datasets/" + simulationapi.SampleDatasetName + "/timeline?bins=60"
	create := `{"scenario":"chat","endpoint_url":"http://127.0.0.1:1/v1","model_name":"fake-model","trace_dataset":"` +
		simulationapi.SampleDatasetName + `","scale_factor":10,"duration_seconds":10}`
	for _, req := range []struct{ method, url, body string }{{"GET", timeline, ""}, {"POST", srv.URL + "/api/simulation/tasks", create}} {
		resp, body := send(t, req.method, req.url, req.body)
		var p struct {
			Status int    `json:"status"`
			Detail string `json:"detail"`
			Code   string `json:"code"`
		}
		_ = json.Unmarshal([]byte(body), &p)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Content-Type") != "application/problem+json" ||
			resp.Header.Get("Retry-After") == "" || !strings.Contains(p.Detail, detail) {
			t.Fatalf("%s %s while mooncake_trace compiles: %d Retry-After %q %s", req.method, req.url, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
	if resp, body := send(t, "GET", srv.URL+"/readyz", ""); resp.StatusCode != http.StatusOK ||
		!strings.Contains(body, "warming: compiling WASM module mooncake_trace\n") {
		t.Fatalf("readyz while compiling: %d %q", resp.StatusCode, body)
	}

	close(release)
	released = true
	fntest.WaitWarm(t, srv.URL)
	var tl simulationapi.Timeline
	if code := call(t, "GET", timeline, "", &tl); code != http.StatusOK || tl.RequestCount == 0 {
		t.Fatalf("timeline once compiled: %d %+v", code, tl)
	}
	var backends struct {
		Backends []simulationapi.Backend `json:"backends"`
	}
	call(t, "GET", srv.URL+"/api/simulation/backends", "", &backends)
	for _, b := range backends.Backends {
		if _, ok := b.Capabilities.TraceFormatCapabilities["mooncake_trace"]; b.Name == "trace-replayer" && !ok {
			t.Fatalf("mooncake_trace not listed once compiled: %+v", b.Capabilities)
		}
	}
}

func send(t *testing.T, method, url, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, string(raw)
}
