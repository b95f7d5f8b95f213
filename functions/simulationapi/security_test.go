package simulationapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lensfn/lensfn/runtime/simtask"
	"github.com/lensfn/lensfn/runtime/state"
)

// recordingModels is an endpoint that serves its model list to anyone and remembers every
// Authorization header it was sent.
func recordingModels(t *testing.T) (string, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"Qwen/Qwen3-8B"}]}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), seen...) }
}

// TestRerunElsewhereNeverSendsTheStoredKey: a rerun onto another endpoint without api_key runs
// without a key; the sealed key of the original task only ever goes to its own endpoint.
func TestRerunElsewhereNeverSendsTheStoredKey(t *testing.T) {
	h, _, endpoint := taskHarness(t)
	var a created
	if code := call(t, "POST", h.url+"/api/simulation/tasks", createBody(endpoint, ""), &a); code != 202 {
		t.Fatal(code)
	}
	other, seen := recordingModels(t)
	var re created
	if code := call(t, "POST", h.url+"/api/simulation/tasks/"+a.TaskID+"/rerun", `{"endpoint_url":"`+other+`"}`, &re); code != 202 {
		t.Fatal(code)
	}
	for _, header := range seen() {
		if strings.Contains(header, endpointKey) {
			t.Fatalf("the stored key was sent to another endpoint: %q", header)
		}
	}
	repo := &simtask.Repo{Store: h.server.Deps.Store, DataDir: h.dataDir}
	stored, err := repo.Load(context.Background(), re.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Internal.APIKey != "" {
		t.Fatal("the rerun elsewhere carries a sealed key")
	}
	// The same endpoint (trailing slash aside) reuses the key.
	if code := call(t, "POST", h.url+"/api/simulation/tasks/"+a.TaskID+"/rerun", `{"endpoint_url":"`+endpoint+`/"}`, &re); code != 202 {
		t.Fatalf("rerun on the same endpoint: %d", code)
	}
}

// TestArtifactPathsComeFromTheTaskID: a record whose task_dir and artifact paths point at the
// secret key serves nothing but the task's own file.
func TestArtifactPathsComeFromTheTaskID(t *testing.T) {
	h, _, endpoint := taskHarness(t)
	secretPath := filepath.Join(h.dataDir, "secret.key")
	if err := os.WriteFile(secretPath, []byte("TOP-SECRET-KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	var a created
	if code := call(t, "POST", h.url+"/api/simulation/tasks", createBody(endpoint, ""), &a); code != 202 {
		t.Fatal(code)
	}
	ctx := context.Background()
	store := h.server.Deps.Store
	rec, err := store.Get(ctx, simtask.Kind, a.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	task, err := simtask.Unmarshal(rec.Doc)
	if err != nil {
		t.Fatal(err)
	}
	// What anyone able to write Redis could store.
	task.TaskDir = h.dataDir
	task.Result = &simtask.Result{Artifacts: []simtask.Artifact{{Kind: "summary-json", Path: secretPath, MediaType: "text/html"},
		{Kind: "per-request-jsonl", Path: filepath.Join(h.dataDir, "artifacts", "simulations", a.TaskID, "..", "..", "..", "secret.key")}}}
	rec.Doc, _ = simtask.Marshal(task)
	rec.Status = simtask.StatusCompleted
	if _, err := store.Update(ctx, rec, state.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"summary-json", "per-request-jsonl"} {
		resp := get(t, h.url+"/api/simulation/tasks/"+a.TaskID+"/artifacts/"+kind)
		body := readAll(t, resp)
		if resp.StatusCode != 404 || strings.Contains(body, "TOP-SECRET") {
			t.Fatalf("%s: %d %s", kind, resp.StatusCode, body)
		}
	}
	// The task's own file is served, with the kind's media type.
	dir := filepath.Join(h.dataDir, "artifacts", "simulations", a.TaskID)
	_ = os.MkdirAll(dir, 0o700)
	_ = os.WriteFile(filepath.Join(dir, "summary.json"), []byte(`{"ok":true}`), 0o600)
	resp := get(t, h.url+"/api/simulation/tasks/"+a.TaskID+"/artifacts/summary-json")
	if body := readAll(t, resp); resp.StatusCode != 200 || body != `{"ok":true}` || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %q %s", resp.StatusCode, body, resp.Header.Get("Content-Type"))
	}
	// A symlink planted in the task folder is not followed.
	_ = os.Remove(filepath.Join(dir, "summary.json"))
	_ = os.Symlink(secretPath, filepath.Join(dir, "summary.json"))
	resp = get(t, h.url+"/api/simulation/tasks/"+a.TaskID+"/artifacts/summary-json")
	if body := readAll(t, resp); resp.StatusCode != 404 || strings.Contains(body, "TOP-SECRET") {
		t.Fatalf("symlink: %d %s", resp.StatusCode, body)
	}
	// No response shows the absolute data dir.
	if body := readAll(t, get(t, h.url+"/api/simulation/tasks/"+a.TaskID)); strings.Contains(body, h.dataDir) {
		t.Fatalf("the data dir leaks: %s", body)
	}
}

// TestLocalRegistrationsAreConfinedToRegularFiles: a registration naming ".", "..", a path, a
// symlink, a folder holding anything but regular files or an already registered name is ignored,
// so the parsers never read the data dir or files outside the datasets dir. A folder of regular
// files is a multi-file dataset (WEKA traces) and is accepted.
func TestLocalRegistrationsAreConfinedToRegularFiles(t *testing.T) {
	h := newHarness(t, nil)
	dir := filepath.Join(h.dataDir, "datasets")
	_ = os.MkdirAll(filepath.Join(dir, "subdir"), 0o700)
	_ = os.WriteFile(filepath.Join(h.dataDir, "secret.key"), []byte("SECRET"), 0o600)
	_ = os.WriteFile(filepath.Join(dir, "good.jsonl"), []byte("0\n"), 0o600)
	_ = os.Symlink(filepath.Join(h.dataDir, "secret.key"), filepath.Join(dir, "link.jsonl"))
	_ = os.Symlink(filepath.Join(h.dataDir, "secret.key"), filepath.Join(dir, "subdir", "trace.json"))
	_ = os.MkdirAll(filepath.Join(dir, "empty"), 0o700)
	_ = os.MkdirAll(filepath.Join(dir, "folder"), 0o700)
	_ = os.WriteFile(filepath.Join(dir, "folder", "trace_0001.json"), []byte("{}"), 0o600)
	reg := func(file, name, filename string) {
		body := `{"name":"` + name + `","filename":"` + filename + `","scenario":"chat","trace_format":"mooncake_trace"}`
		if err := os.WriteFile(filepath.Join(dir, file+".dataset.json"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	reg("a-good", "good", "good.jsonl")
	reg("b-dup", "good", "good.jsonl")
	reg("dot", "dot", ".")
	reg("dotdot", "dotdot", "..")
	reg("path", "path", "../secret.key")
	reg("link", "link", "link.jsonl")
	reg("dir", "dir", "subdir")
	reg("empty", "empty", "empty")
	reg("folder", "folder", "folder")
	reg("missing", "missing", "nothing.jsonl")
	var out struct {
		Datasets []struct {
			Name string `json:"name"`
		} `json:"datasets"`
	}
	call(t, "GET", h.url+"/api/simulation/trace-datasets", "", &out)
	count := map[string]int{}
	for _, d := range out.Datasets {
		count[d.Name]++
	}
	if count["good"] != 1 || count["folder"] != 1 {
		t.Fatalf("good registered %d times, folder %d times", count["good"], count["folder"])
	}
	for _, name := range []string{"dot", "dotdot", "path", "link", "dir", "empty", "missing"} {
		if count[name] != 0 {
			t.Errorf("registration %q was accepted", name)
		}
	}
}
