package simulationapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	simulationapi "github.com/lensfn/lensfn/functions/simulation-api"
)

const sharedTraces = "../../../shared/traces"

func realTrace(t *testing.T, rel string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(sharedTraces, rel))
	if err != nil {
		t.Skipf("shared traces not beside the repo: %v", err)
	}
	return raw
}

func TestDownloadFromMirrorIsVerifiedCoalescedAndIdempotent(t *testing.T) {
	sink := &eventSink{}
	sinkSrv := httptest.NewServer(sink)
	defer sinkSrv.Close()
	h := newHarness(t, map[string]string{"K_SINK": sinkSrv.URL})
	h.mirror.files["conversation_trace.jsonl"] = realTrace(t, "mooncake/conversation_trace.jsonl")
	h.mirror.gate = make(chan struct{})

	const callers = 5
	results := make([]simulationapi.DownloadResult, callers)
	codes := make([]int, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = call(t, "POST", h.url+"/api/simulation/trace-datasets/download", `{"dataset":"mooncake-conversation"}`, &results[i])
		}()
	}
	close(h.mirror.gate)
	wg.Wait()
	for i := range callers {
		if codes[i] != 200 || results[i].SHA256 != "b8cbb061a85206d729d91cdc2981f43c9e0d99209dce588d3af5f7934408b9df" ||
			results[i].SizeBytes != 3029533 {
			t.Fatalf("caller %d: %d %+v", i, codes[i], results[i])
		}
	}
	if hits := h.mirror.hits["/conversation_trace.jsonl"]; hits != 1 {
		t.Fatalf("concurrent downloads were not coalesced: %d fetches", hits)
	}
	r := results[0]
	if r.Path != "datasets/conversation_trace.jsonl" || r.TraceFormat != "mooncake_trace" ||
		r.ArtifactURI != "artifact://dataset/mooncake-conversation/conversation_trace.jsonl" || r.MetadataPath != r.Path+".metadata.json" {
		t.Fatalf("%+v", r)
	}
	var meta map[string]any
	raw, err := os.ReadFile(filepath.Join(h.dataDir, r.MetadataPath))
	if err != nil || json.Unmarshal(raw, &meta) != nil {
		t.Fatalf("metadata: %v", err)
	}
	if meta["sha256"] != r.SHA256 || meta["fetched_from"] != "mirror" || meta["license"] != "Apache-2.0" {
		t.Fatalf("metadata %v", meta)
	}
	if got := sink.count(); got != 1 {
		t.Fatalf("%d dataset events sent, want 1", got)
	}
	// Present and verified: answered without fetching; force fetches again and announces it.
	call(t, "POST", h.url+"/api/simulation/trace-datasets/download", `{"dataset":"mooncake-conversation"}`, nil)
	if h.mirror.hits["/conversation_trace.jsonl"] != 1 || sink.count() != 1 {
		t.Fatal("a present dataset was fetched again")
	}
	call(t, "POST", h.url+"/api/simulation/trace-datasets/download", `{"dataset":"mooncake-conversation","force":true}`, nil)
	if h.mirror.hits["/conversation_trace.jsonl"] != 2 || sink.count() != 2 {
		t.Fatal("force did not fetch again")
	}
	var list struct {
		Datasets []simulationapi.DatasetView `json:"datasets"`
	}
	call(t, "GET", h.url+"/api/simulation/trace-datasets", "", &list)
	for _, d := range list.Datasets {
		if d.Name == "mooncake-conversation" && (!d.Downloaded || d.SizeBytes == nil || *d.SizeBytes != 3029533) {
			t.Fatalf("%+v", d)
		}
	}
}

func TestMultiFileDatasetDownloadsIntoADirectory(t *testing.T) {
	h := newHarness(t, nil)
	entries, err := os.ReadDir(filepath.Join(sharedTraces, "weka", "kv-cache-tester"))
	if err != nil {
		t.Skipf("shared traces not beside the repo: %v", err)
	}
	for _, e := range entries {
		h.mirror.files["weka-kv-cache-tester/"+e.Name()] = realTrace(t, "weka/kv-cache-tester/"+e.Name())
	}
	var r simulationapi.DownloadResult
	if code := call(t, "POST", h.url+"/api/simulation/trace-datasets/download", `{"dataset":"weka-kv-cache-tester"}`, &r); code != 200 {
		t.Fatal(code)
	}
	got, _ := os.ReadDir(filepath.Join(h.dataDir, r.Path))
	if len(got) != 124 {
		t.Fatalf("%d files in %s", len(got), r.Path)
	}
	// One corrupt file fails the whole download and leaves the verified copy in place.
	h.mirror.files["weka-kv-cache-tester/trace_0012.json"] = []byte("{}")
	var prob map[string]any
	if code := call(t, "POST", h.url+"/api/simulation/trace-datasets/download", `{"dataset":"weka-kv-cache-tester","force":true}`, &prob); code != 400 ||
		!strings.Contains(prob["detail"].(string), "trace_0012.json") {
		t.Fatalf("%d %v", code, prob)
	}
	if got, _ := os.ReadDir(filepath.Join(h.dataDir, r.Path)); len(got) != 124 {
		t.Fatalf("the verified copy was damaged: %d files", len(got))
	}
}

type eventSink struct {
	mu  sync.Mutex
	ids []string
}

func (s *eventSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.ids = append(s.ids, r.Header.Get("Ce-Id"))
	s.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

func (s *eventSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ids)
}
