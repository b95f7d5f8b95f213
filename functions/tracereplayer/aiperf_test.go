package tracereplayer

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/runtime/simtask"
)

func TestAIPerfArgsFollowTheTask(t *testing.T) {
	end := 120.0
	task := &simtask.Task{ID: "1a2b3c4d", ModelName: "Qwen/Qwen3-8B", EndpointURL: "http://127.0.0.1:8000/v1/",
		Simulation: simtask.Simulation{DurationSeconds: 60, GracePeriodSeconds: 30, Stream: true, BackendOptions: map[string]any{}},
		Prompt: simtask.Prompt{Trace: simtask.Trace{Path: "/data/t.jsonl", Format: "mooncake_trace", FixedSchedule: true,
			TimeoutSeconds: 3600, SynthesisSpeedupRatio: 1, StartSeconds: 30, EndSeconds: &end}}}
	args := strings.Join(aiperfArgs(task, "/out"), " ")
	for _, want := range []string{"profile --model Qwen/Qwen3-8B --url http://127.0.0.1:8000 --endpoint-type chat",
		"--input-file /data/t.jsonl --custom-dataset-type mooncake_trace", "--artifact-dir /out", "--benchmark-duration 60",
		"--benchmark-grace-period 30", "--streaming", "--fixed-schedule-start-offset 30000", "--fixed-schedule-end-offset 120000",
		"--extra-inputs ignore_eos:true"} {
		if !strings.Contains(args, want) {
			t.Errorf("args lack %q: %s", want, args)
		}
	}
	if strings.Contains(args, "api-key") || strings.Contains(args, "replay-speedup") {
		t.Fatalf("unexpected flag: %s", args)
	}
	task.Prompt.Trace.Format, task.Prompt.Trace.SynthesisSpeedupRatio = "baseten_trace", 4
	args = strings.Join(aiperfArgs(task, "/out"), " ")
	if !strings.Contains(args, "--endpoint-type completions") || !strings.Contains(args, "--replay-speedup 4") {
		t.Fatalf("baseten: %s", args)
	}
}

// TestAIPerfReplayConvertsTheExport runs a stand-in aiperf and checks the records it leaves.
func TestAIPerfReplayConvertsTheExport(t *testing.T) {
	deps := testDeps(t)
	repo := &simtask.Repo{Store: deps.Store, DataDir: deps.Config.DataDir}
	id := queue(t, repo)
	task := statusOf(t, repo, id)
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(trace, []byte("{}\n{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	task.Prompt.Trace = simtask.Trace{Path: trace, Format: "mooncake_trace", FixedSchedule: true, TimeoutSeconds: 60, SynthesisSpeedupRatio: 1}
	fake, _ := filepath.Abs("testdata/fake-aiperf")
	a := &aiperfRunner{command: fake}
	if v := aiperfVersion(context.Background(), fake); v != "0.12.0" {
		t.Fatalf("version %q", v)
	}
	out, err := a.replay(context.Background(), &Run{Task: task, APIKey: "sk-aiperf-key", Repo: repo, Poll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if out.Requests != 3 || out.Outcome != "completed" {
		t.Fatalf("%+v", out)
	}
	f, err := os.Open(out.RecordsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []loadgen.Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r loadgen.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records (the warmup request must be left out)", len(recs))
	}
	ok, failed := recs[0], recs[1]
	if !ok.Successful || *ok.StatusCode != 200 || *ok.TTFTMs != 40 || *ok.TPOTMs != 2 || ok.StartedAtSeconds != 0 ||
		ok.CompletedAtSeconds != 0.3 || ok.InputTokens != 512 || ok.OutputTokens != 131 || ok.LatencyMs != 300 {
		t.Fatalf("ok record %+v", ok)
	}
	// The stand-in echoes the key in its error, as some endpoints do: the record must not keep it.
	if failed.Successful || *failed.StatusCode != 503 || !strings.Contains(*failed.Error, "Service Unavailable") ||
		strings.Contains(*failed.Error, "sk-aiperf-key") || !strings.Contains(*failed.Error, "[REDACTED]") ||
		failed.InputTokens != 700 || failed.StartedAtSeconds != 0.5 {
		t.Fatalf("failed record %+v", failed)
	}
	logs, _ := repo.Get(context.Background(), id)
	if slices.ContainsFunc(logs.Logs, func(l string) bool { return strings.Contains(l, "sk-aiperf-key") }) {
		t.Fatal("the API key reached the task log")
	}
}
