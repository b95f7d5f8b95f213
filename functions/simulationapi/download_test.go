package simulationapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/simulationapi"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/tests/tracefixture"
)

// The catalogue's downloads verify its pinned digests, so these cases need the real traces;
// download_generated_test.go runs the same downloader on generated files, and the timeline
// runs on a generated trace as well. Without the real traces the run ends with one
// line naming the cases skipped.
var shared tracefixture.Shared

func TestMain(m *testing.M) { shared.Main(m, "functions/simulationapi") }

func realTrace(t *testing.T, rel string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(shared.Traces(t, "../.."), rel))
	if err != nil {
		t.Fatal(err)
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
	// One caller's request started the fetch and the others joined it, or (scheduled after it had
	// finished) found the verified file: exactly those two answers, and at least one transfer.
	r := results[0]
	transfers := 0
	for i := range callers {
		switch {
		case results[i].Transferred && results[i].Source == "mirror":
			r = results[i]
			transfers++
		case !results[i].Transferred && results[i].Source == "reused":
		default:
			t.Fatalf("caller %d: neither transferred from the mirror nor reused: %+v", i, results[i])
		}
	}
	if transfers == 0 {
		t.Fatalf("no caller says it transferred from the mirror: %+v", results)
	}
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
	// Present and verified: answered without fetching, saying so; force fetches again and announces it.
	var again simulationapi.DownloadResult
	call(t, "POST", h.url+"/api/simulation/trace-datasets/download", `{"dataset":"mooncake-conversation"}`, &again)
	if h.mirror.hits["/conversation_trace.jsonl"] != 1 || sink.count() != 1 {
		t.Fatal("a present dataset was fetched again")
	}
	if again.Transferred || again.Source != "reused" || again.SHA256 != r.SHA256 {
		t.Fatalf("a reused file is not reported as reused: %+v", again)
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
	entries, err := os.ReadDir(filepath.Join(shared.Traces(t, "../.."), "weka", "kv-cache-tester"))
	if err != nil {
		t.Fatal(err)
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
	if code := call(t, "POST", h.url+"/api/simulation/trace-datasets/download", `{"dataset":"weka-kv-cache-tester","force":true}`, &prob); code != 502 ||
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

// Failures of the source are the source's: a mirror's 404 and a refused connection are 502, a
// source that does not answer in time is 504, each with the cause; none is a client error.
func TestUpstreamFailuresAre502Or504WithTheCause(t *testing.T) {
	h := newHarness(t, nil)
	var prob map[string]any
	code := call(t, "POST", h.url+"/api/simulation/trace-datasets/download", `{"dataset":"mooncake-conversation"}`, &prob)
	if detail := anyString(prob["detail"]); code != 502 || prob["code"] != "upstream_unavailable" ||
		!strings.Contains(detail, "the mirror (LENS_DATASET_MIRROR) answered HTTP 404") || !strings.Contains(detail, "/conversation_trace.jsonl") {
		t.Fatalf("mirror 404: %d %v", code, prob)
	}

	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close() // nothing listens there now
	refused := newHarness(t, map[string]string{"LENS_DATASET_MIRROR": closedURL})
	code = call(t, "POST", refused.url+"/api/simulation/trace-datasets/download", `{"dataset":"mooncake-conversation"}`, &prob)
	if code != 502 || !strings.Contains(anyString(prob["detail"]), "could not connect to") {
		t.Fatalf("refused: %d %v", code, prob)
	}

	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-hang }))
	defer slow.Close()
	defer close(hang)
	deps := fntest.Deps(t, simulationapi.Name, fntest.Env(t, nil))
	dl := &simulationapi.Downloader{Root: t.TempDir(), Mirror: slow.URL, Client: &http.Client{Timeout: 50 * time.Millisecond},
		Store: deps.Store, Owner: "test", MaxBytes: 1 << 20}
	var d simulationapi.Dataset
	for _, ds := range simulationapi.Datasets {
		if ds.Name == "mooncake-conversation" {
			d = ds
		}
	}
	_, err := dl.Download(context.Background(), d, false)
	if problem.CodeOf(err) != problem.CodeGatewayTimeout || !strings.Contains(err.Error(), "conversation_trace.jsonl") {
		t.Fatalf("a source that does not answer: %v", err)
	}
}
