package e2e_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lensfn/lensfn/deploy/local"
)

const conversationSHA = "b8cbb061a85206d729d91cdc2981f43c9e0d99209dce588d3af5f7934408b9df"

func TestCatalogueOverTheLocalStack(t *testing.T) {
	mirror, real := datasetMirror(t)
	stack := startStack(t, stackOptions{only: []string{"simulation-api"}, env: map[string]string{"LENS_DATASET_MIRROR": mirror}})
	api := stack.APIURL + "/api/simulation"
	fnURL, _ := stack.FunctionURL("simulation-api")
	generatedPath := filepath.Join(stack.DataDir(), "datasets", "generated_conversation.jsonl")
	builds := func(dataset string) int {
		return counter(t, fnURL, `lens_simulation_timeline_index_builds_total{dataset="`+dataset+`"}`)
	}

	t.Run("catalogue routes answer spec-shaped JSON", func(t *testing.T) {
		for path, key := range map[string]string{"/backends": "backends", "/scenarios": "scenarios", "/trace-datasets": "datasets"} {
			code, body := get(t, api+path)
			var doc map[string]json.RawMessage
			if code != 200 || json.Unmarshal([]byte(body), &doc) != nil || len(doc[key]) < 3 {
				t.Fatalf("GET %s: %d %s", path, code, body)
			}
		}
		code, body := get(t, api+"/backends")
		if code != 200 || !strings.Contains(body, `"mooncake_trace"`) || !strings.Contains(body, `"supports_scale_factor"`) {
			t.Fatalf("backends do not list the parser modules: %s", body)
		}
	})

	t.Run("a generated local dataset is listed and has a timeline", func(t *testing.T) {
		code, body := get(t, api+"/trace-datasets/"+generatedMooncake+"/timeline?bins=60")
		var tl struct {
			RequestCount int               `json:"request_count"`
			Bins         []json.RawMessage `json:"bins"`
		}
		if code != 200 || json.Unmarshal([]byte(body), &tl) != nil || tl.RequestCount != len(generatedRows) || len(tl.Bins) != 60 {
			t.Fatalf("timeline: %d %s, want %d requests in 60 bins", code, body, len(generatedRows))
		}
		if n := builds(generatedMooncake); n != 1 {
			t.Fatalf("the first timeline parsed the trace %d times, want 1", n)
		}
	})

	t.Run("a mirror that serves other bytes is refused and nothing is kept", func(t *testing.T) {
		code, body := post(t, api+"/trace-datasets/download", "application/json", `{"dataset":"`+misservedDataset+`"}`, nil)
		if code != 502 || !strings.Contains(body, "sha256 mismatch") || !strings.Contains(body, "LENS_DATASET_MIRROR") {
			t.Fatalf("download of bytes other than the pinned ones: %d %s", code, body)
		}
		entries, err := os.ReadDir(filepath.Join(stack.DataDir(), "datasets"))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.Contains(e.Name(), misservedFile) {
				t.Fatalf("the refused download left %s in the datasets dir", e.Name())
			}
		}
		if code, body := get(t, api+"/trace-datasets/"+misservedDataset+"/timeline?bins=60"); code != 409 || !strings.Contains(body, "not downloaded") {
			t.Fatalf("timeline of the refused dataset: %d %s", code, body)
		}
	})

	t.Run("the dataset event indexes the file once, and a duplicated event causes one side effect", func(t *testing.T) {
		raw, err := os.ReadFile(generatedPath)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(raw)
		before := builds(generatedMooncake)
		sendDuplicatedDatasetEvent(t, stack, fnURL, "generated-1", generatedMooncake, generatedPath, hex.EncodeToString(sum[:]), len(raw))
		if after := builds(generatedMooncake); after != before+1 {
			t.Fatalf("three deliveries of one event built the index %d times, want 1", after-before)
		}
		// The timeline now reads the index the event built: the trace is not parsed again.
		if code, body := get(t, api+"/trace-datasets/"+generatedMooncake+"/timeline?bins=100"); code != 200 ||
			!strings.Contains(body, fmt.Sprintf(`"request_count":%d`, len(generatedRows))) {
			t.Fatalf("timeline: %d %.300s", code, body)
		}
		if after := builds(generatedMooncake); after != before+1 {
			t.Fatalf("the timeline parsed the trace again after the event indexed it: %d builds, want %d", after, before+1)
		}
	})

	t.Run("download from the real mirror, indexed once by the event", func(t *testing.T) {
		if !real {
			shared.Traces(t, repoRoot)
		}
		code, body := post(t, api+"/trace-datasets/download", "application/json", `{"dataset":"mooncake-conversation"}`, nil)
		if code != 200 || !strings.Contains(body, conversationSHA) {
			t.Fatalf("download: %d %s", code, body)
		}
		eventually(t, 30*time.Second, "the dataset event to build the index", func() bool { return builds("mooncake-conversation") == 1 })
		code, body = get(t, api+"/trace-datasets/mooncake-conversation/timeline?bins=100")
		var tl struct {
			RequestCount int               `json:"request_count"`
			Bins         []json.RawMessage `json:"bins"`
		}
		if code != 200 || json.Unmarshal([]byte(body), &tl) != nil || tl.RequestCount != 12031 || len(tl.Bins) != 100 {
			t.Fatalf("timeline: %d %s", code, body)
		}
		if got := builds("mooncake-conversation"); got != 1 {
			t.Fatalf("the timeline parsed the trace again: builds = %d", got)
		}
		// A duplicated event for the real file causes one side effect too.
		path := filepath.Join(stack.DataDir(), "datasets", "conversation_trace.jsonl")
		sendDuplicatedDatasetEvent(t, stack, fnURL, "real-1", "mooncake-conversation", path, conversationSHA, 3029533)
		if got := builds("mooncake-conversation"); got != 2 {
			t.Fatalf("builds went from 1 to %d, want 2", got)
		}
	})

	t.Run("a killed function is restarted and the API answers again", func(t *testing.T) {
		pid := stack.PID("simulation-api")
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "a new process", func() bool { p := stack.PID("simulation-api"); return p != 0 && p != pid })
		eventually(t, 30*time.Second, "the API to answer", func() bool { code, _ := get(t, api+"/scenarios"); return code == 200 })
		code, body := get(t, api+"/trace-datasets")
		if code != 200 || !strings.Contains(body, fmt.Sprintf("%q", generatedMooncake)) {
			t.Fatalf("after restart the catalogue does not list the local dataset: %d %.300s", code, body)
		}
		// The index outlived the process: the new one reads it from the data dir, parsing nothing.
		if code, body := get(t, api+"/trace-datasets/"+generatedMooncake+"/timeline?bins=60"); code != 200 {
			t.Fatalf("timeline after restart: %d %.300s", code, body)
		}
		if n := builds(generatedMooncake); n != 0 {
			t.Fatalf("after restart the timeline parsed the trace again (%d builds), want the stored index", n)
		}
		if !real {
			return
		}
		// The store outlived the process: the download is still known, no re-fetch needed.
		code, body = post(t, api+"/trace-datasets/download", "application/json", `{"dataset":"mooncake-conversation"}`, nil)
		if code != 200 || !strings.Contains(body, conversationSHA) {
			t.Fatalf("after restart: %d %s", code, body)
		}
	})
}

// sendDuplicatedDatasetEvent posts one dataset.downloaded CloudEvent three times with the id
// ce-id and waits until the function has counted the two repeats as duplicates and the broker
// has delivered everything.
func sendDuplicatedDatasetEvent(t *testing.T, stack *local.Stack, fnURL, ceID, dataset, path, sha string, size int) {
	t.Helper()
	dup := `lens_events_received_total{function="simulation-api",outcome="duplicate",type="dev.lensfn.simulation.dataset.downloaded.v1"}`
	before := counter(t, fnURL, dup)
	event := fmt.Sprintf(`{"dataset":%q,"trace_format":"mooncake_trace","path":%q,"sha256":%q,"size_bytes":%d}`, dataset, path, sha, size)
	header := map[string]string{"Ce-Specversion": "1.0", "Ce-Id": ceID, "Ce-Source": "/lensfn/simulation-api",
		"Ce-Type": "dev.lensfn.simulation.dataset.downloaded.v1"}
	for range 3 {
		if code, body := post(t, stack.BrokerURL, "application/json", event, header); code != 202 {
			t.Fatalf("broker: %d %s", code, body)
		}
	}
	eventually(t, 30*time.Second, "two duplicate deliveries", func() bool { return counter(t, fnURL, dup) == before+2 })
	stack.WaitForDeliveries()
}

// counter is a counter's value in the function's exposition (0 while it is absent).
func counter(t *testing.T, baseURL, series string) int {
	t.Helper()
	v := metric(t, baseURL, series)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s = %q, not a count", series, v)
	}
	return n
}
