package simulationapi_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lensfn/lensfn/functions/simulationapi"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/tests/tracefixture"
)

// The downloader's guarantees hold on generated files whose digests the test pins as the
// catalogue pins the real ones': the real-trace tests above run the same paths on the
// published bytes where ../shared has them.

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// generatedDownloader is a Downloader over a mirror serving m, counting completed transfers.
func generatedDownloader(t *testing.T, m *mirror) (*simulationapi.Downloader, *atomic.Int32) {
	t.Helper()
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	deps := fntest.Deps(t, simulationapi.Name, fntest.Env(t, nil))
	var fetched atomic.Int32
	return &simulationapi.Downloader{Root: t.TempDir(), Mirror: srv.URL, Client: &http.Client{}, Store: deps.Store,
		Owner: "test", MaxBytes: 1 << 20,
		OnFetched: func(context.Context, simulationapi.Dataset, simulationapi.DownloadResult) { fetched.Add(1) }}, &fetched
}

func TestDownloadOfAGeneratedFileIsVerifiedCoalescedAndIdempotent(t *testing.T) {
	trace := tracefixture.MooncakeJSONL(tracefixture.Mooncake(200, 600000, 3))
	m := &mirror{files: map[string][]byte{"generated_trace.jsonl": trace}, hits: map[string]int{}, gate: make(chan struct{})}
	dl, fetched := generatedDownloader(t, m)
	d := simulationapi.Dataset{Name: "generated", Filename: "generated_trace.jsonl", Scenario: "chat", TraceFormat: "mooncake_trace",
		License: "CC0-1.0", Files: []simulationapi.DatasetFile{{Name: "generated_trace.jsonl",
			URL: "https://upstream.invalid/generated_trace.jsonl", SHA256: digest(trace)}}}

	const callers = 5
	results := make([]simulationapi.DownloadResult, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = dl.Download(context.Background(), d, false)
		}()
	}
	close(m.gate)
	wg.Wait()
	transfers := 0
	for i := range callers {
		r := results[i]
		if errs[i] != nil || r.SHA256 != digest(trace) || r.SizeBytes != int64(len(trace)) {
			t.Fatalf("caller %d: %v %+v", i, errs[i], r)
		}
		switch {
		case r.Transferred && r.Source == "mirror":
			transfers++
		case !r.Transferred && r.Source == "reused":
		default:
			t.Fatalf("caller %d: neither transferred from the mirror nor reused: %+v", i, r)
		}
	}
	if hits := m.hits["/generated_trace.jsonl"]; hits != 1 || transfers == 0 || fetched.Load() != 1 {
		t.Fatalf("concurrent downloads: %d fetches, %d transfers reported, %d announced; want 1, at least 1, 1", hits, transfers, fetched.Load())
	}
	if got, err := os.ReadFile(dl.Path(d)); err != nil || !bytes.Equal(got, trace) {
		t.Fatalf("the downloaded file differs from the served one: %v", err)
	}
	var meta map[string]any
	raw, err := os.ReadFile(results[0].MetadataPath)
	if err != nil || json.Unmarshal(raw, &meta) != nil || meta["sha256"] != digest(trace) || meta["fetched_from"] != "mirror" {
		t.Fatalf("metadata: %v %s", err, raw)
	}

	// Present and verified: reused without a fetch; force fetches again.
	if r, err := dl.Download(context.Background(), d, false); err != nil || r.Transferred || r.Source != "reused" || m.hits["/generated_trace.jsonl"] != 1 {
		t.Fatalf("a present file: %v %+v, %d fetches", err, r, m.hits["/generated_trace.jsonl"])
	}
	if _, err := dl.Download(context.Background(), d, true); err != nil || m.hits["/generated_trace.jsonl"] != 2 || fetched.Load() != 2 {
		t.Fatalf("force: %v, %d fetches, %d announced", err, m.hits["/generated_trace.jsonl"], fetched.Load())
	}

	// Other bytes than the pinned ones are refused, the verified copy stays, nothing is announced.
	m.files["generated_trace.jsonl"] = append(bytes.Clone(trace), '\n')
	_, err = dl.Download(context.Background(), d, true)
	if problem.CodeOf(err) != problem.CodeUpstream || !strings.Contains(err.Error(), "sha256 mismatch") ||
		!strings.Contains(err.Error(), "generated_trace.jsonl") {
		t.Fatalf("other bytes: %v", err)
	}
	if got, _ := os.ReadFile(dl.Path(d)); !bytes.Equal(got, trace) || fetched.Load() != 2 {
		t.Fatalf("a refused download damaged the verified copy or was announced (%d)", fetched.Load())
	}
	entries, _ := os.ReadDir(dl.Root)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".part") {
			t.Fatalf("a refused download left %s", e.Name())
		}
	}
}

func TestMultiFileDownloadOfGeneratedTracesIsADirectory(t *testing.T) {
	m := &mirror{files: map[string][]byte{}, hits: map[string]int{}}
	dl, _ := generatedDownloader(t, m)
	d := simulationapi.Dataset{Name: "generated-weka", Filename: "generated-weka", Scenario: "coding", TraceFormat: "weka_public_dataset",
		License: "CC0-1.0"}
	want := map[string][]byte{}
	for i := range 3 {
		name := fmt.Sprintf("trace_%04d.json", i)
		raw, _ := tracefixture.WEKATrace(strings.TrimSuffix(name, ".json"), 6, i%2 == 0, uint64(i)+1)
		want[name] = raw
		m.files["generated-weka/"+name] = raw
		d.Files = append(d.Files, simulationapi.DatasetFile{Name: name, URL: "https://upstream.invalid/" + name, SHA256: digest(raw)})
	}
	r, err := dl.Download(context.Background(), d, false)
	if err != nil || r.SHA256 != d.SHA256() || r.Path != filepath.Join(dl.Root, "generated-weka") {
		t.Fatalf("download: %v %+v", err, r)
	}
	check := func(when string) {
		t.Helper()
		got, _ := os.ReadDir(r.Path)
		if len(got) != len(want) {
			t.Fatalf("%s: %d files in %s, want %d", when, len(got), r.Path, len(want))
		}
		for name, raw := range want {
			if b, err := os.ReadFile(filepath.Join(r.Path, name)); err != nil || !bytes.Equal(b, raw) {
				t.Fatalf("%s: %s differs from the served file: %v", when, name, err)
			}
		}
	}
	check("after the download")
	// One corrupt file fails the whole download, naming it, and leaves the verified copy in place.
	m.files["generated-weka/trace_0001.json"] = []byte("{}")
	if _, err := dl.Download(context.Background(), d, true); problem.CodeOf(err) != problem.CodeUpstream ||
		!strings.Contains(err.Error(), "trace_0001.json") {
		t.Fatalf("a corrupt file: %v", err)
	}
	check("after a refused download")
}
