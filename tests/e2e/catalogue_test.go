package e2e_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const conversationSHA = "b8cbb061a85206d729d91cdc2981f43c9e0d99209dce588d3af5f7934408b9df"

func TestCatalogueOverTheLocalStack(t *testing.T) {
	mirror := mirrorOfSharedTraces(t)
	stack := startStack(t, stackOptions{only: []string{"simulation-api"}, env: withMirror(map[string]string{}, mirror)})
	api := stack.APIURL + "/api/simulation"
	fnURL, _ := stack.FunctionURL("simulation-api")

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
	})

	t.Run("download from the mirror, indexed once by the event", func(t *testing.T) {
		if mirror == "" {
			shared.Traces(t, repoRoot)
		}
		code, body := post(t, api+"/trace-datasets/download", "application/json", `{"dataset":"mooncake-conversation"}`, nil)
		if code != 200 || !strings.Contains(body, conversationSHA) {
			t.Fatalf("download: %d %s", code, body)
		}
		builds := `lens_simulation_timeline_index_builds_total{dataset="mooncake-conversation"}`
		eventually(t, 30*time.Second, "the dataset event to build the index", func() bool { return metric(t, fnURL, builds) == "1" })
		code, body = get(t, api+"/trace-datasets/mooncake-conversation/timeline?bins=100")
		var tl struct {
			RequestCount int               `json:"request_count"`
			Bins         []json.RawMessage `json:"bins"`
		}
		if code != 200 || json.Unmarshal([]byte(body), &tl) != nil || tl.RequestCount != 12031 || len(tl.Bins) != 100 {
			t.Fatalf("timeline: %d %s", code, body)
		}
		if got := metric(t, fnURL, builds); got != "1" {
			t.Fatalf("the timeline parsed the trace again: builds = %s", got)
		}
	})

	t.Run("a duplicated CloudEvent causes one side effect", func(t *testing.T) {
		if mirror == "" {
			shared.Traces(t, repoRoot)
		}
		builds := `lens_simulation_timeline_index_builds_total{dataset="mooncake-conversation"}`
		before := metric(t, fnURL, builds)
		path := filepath.Join(stack.DataDir(), "datasets", "conversation_trace.jsonl")
		event := `{"dataset":"mooncake-conversation","trace_format":"mooncake_trace","path":"` + path +
			`","sha256":"` + conversationSHA + `","size_bytes":3029533}`
		header := map[string]string{"Ce-Specversion": "1.0", "Ce-Id": "duplicate-test-1", "Ce-Source": "/lensfn/simulation-api",
			"Ce-Type": "dev.lensfn.simulation.dataset.downloaded.v1"}
		for range 3 {
			if code, body := post(t, stack.BrokerURL, "application/json", event, header); code != 202 {
				t.Fatalf("broker: %d %s", code, body)
			}
		}
		dup := `lens_events_received_total{function="simulation-api",outcome="duplicate",type="dev.lensfn.simulation.dataset.downloaded.v1"}`
		eventually(t, 30*time.Second, "two duplicate deliveries", func() bool { return metric(t, fnURL, dup) == "2" })
		stack.WaitForDeliveries()
		if after := metric(t, fnURL, builds); after != "2" || before != "1" {
			t.Fatalf("builds went from %s to %s, want 1 to 2", before, after)
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
		if mirror == "" {
			return
		}
		// The store outlived the process: the download is still known, no re-fetch needed.
		code, body = post(t, api+"/trace-datasets/download", "application/json", `{"dataset":"mooncake-conversation"}`, nil)
		if code != 200 || !strings.Contains(body, conversationSHA) {
			t.Fatalf("after restart: %d %s", code, body)
		}
	})
}
