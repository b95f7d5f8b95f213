package simulationapi_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	simulationapi "github.com/lensfn/lensfn/functions/simulation-api"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/wasmhost/wasmtest"
)

// TestTimelineThroughTheWASMParser runs the real function build: the built-in parser modules
// read the real Mooncake conversation trace.
func TestTimelineThroughTheWASMParser(t *testing.T) {
	trace := realTrace(t, "mooncake/conversation_trace.jsonl")
	dataDir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dataDir, "datasets"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dataDir, "datasets", "conversation_trace.jsonl"), trace, 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"LENS_DATA_DIR": dataDir, "REDIS_URL": os.Getenv("REDIS_URL"), "LENS_STORE_PREFIX": testPrefix(),
		"LENS_BUILTIN_MODULE_DIR": wasmtest.BuiltinDir(t), "LENS_CACHE_DIR": wasmtest.CacheDir(t)}
	cfg, err := fn.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	s, err := fn.NewServer(context.Background(), cfg, simulationapi.Name, simulationapi.Build)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	srv := httptest.NewServer(s.Handler)
	defer srv.Close()

	var tl simulationapi.Timeline
	if code := call(t, "GET", srv.URL+"/api/simulation/trace-datasets/mooncake-conversation/timeline", "", &tl); code != 200 {
		t.Fatal(code)
	}
	if tl.RequestCount != 12031 || tl.DurationSeconds != 3536.999 || len(tl.Bins) != 800 || tl.SourceSizeBytes != 3029533 {
		t.Fatalf("request_count %d duration %v bins %d size %d", tl.RequestCount, tl.DurationSeconds, len(tl.Bins), tl.SourceSizeBytes)
	}
	sum := 0
	for _, b := range tl.Bins {
		sum += b.RequestCount
	}
	if sum != 12031 {
		t.Fatalf("bins hold %d requests", sum)
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
}

// TestUserModulesAppearInTheCatalogue: a parser dropped into LENS_MODULE_DIR is listed like a
// built-in, with the capabilities its descriptor declares.
func TestUserModulesAppearInTheCatalogue(t *testing.T) {
	env := map[string]string{"LENS_DATA_DIR": t.TempDir(), "REDIS_URL": os.Getenv("REDIS_URL"), "LENS_STORE_PREFIX": testPrefix(),
		"LENS_BUILTIN_MODULE_DIR": wasmtest.BuiltinDir(t), "LENS_CACHE_DIR": wasmtest.CacheDir(t),
		"LENS_MODULE_DIR": wasmtest.ExampleDir(t)}
	cfg, err := fn.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	s, err := fn.NewServer(context.Background(), cfg, simulationapi.Name, simulationapi.Build)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	srv := httptest.NewServer(s.Handler)
	defer srv.Close()
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
		return
	}
	t.Fatal("no trace-replayer backend")
}
