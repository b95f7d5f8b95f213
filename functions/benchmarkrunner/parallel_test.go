package benchmarkrunner_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/benchmarkrunner"
	"github.com/lensfn/lensfn/runtime/evalrun"
)

func parallel() benchmarkrunner.Settings {
	s := fast()
	s.MaxWorkers = 2
	return s
}

// records reads the run's per-request artifact.
func records(t *testing.T, h *harness, id string) []map[string]any {
	t.Helper()
	f, err := os.Open(h.runs.RecordsPath(id))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("record %q: %v", sc.Text(), err)
		}
		out = append(out, rec)
	}
	return out
}

// A parallelism-2 matrix run is sent by two workers, each the whole workload once; the owner
// merges their records: every count is doubled, stage metrics included, and each record names
// its worker.
func TestParallelRunMergesItsWorkersRecords(t *testing.T) {
	model := &fakeModel{ttft: 10 * time.Millisecond, itl: 2 * time.Millisecond}
	h := start(t, model, parallel())
	id := h.create(t, `{"deployment_execution_id":"exec-1","parallelism":2,"matrix":[{"isl":16,"osl":6}],
		"concurrency_stages":[{"concurrency":2,"num_requests":5},{"concurrency":3,"num_requests":7}],"warmup_requests":1}`)
	run := h.waitFor(t, id, 60*time.Second, terminal)
	m := doc(t, run)
	if m["status"] != "succeeded" {
		t.Fatalf("status %v error %v", m["status"], m["error"])
	}
	metrics := m["metrics"].(map[string]any)
	if metrics["request_count"] != 24.0 || metrics["success_count"] != 24.0 {
		t.Fatalf("counts %v/%v, want 24/24 (2 workers x 12)", metrics["success_count"], metrics["request_count"])
	}
	if metrics["itl_ms"] == nil || metrics["tpot_ms"] == nil {
		t.Fatalf("the merged records lost their token timings: itl %v tpot %v", metrics["itl_ms"], metrics["tpot_ms"])
	}
	stages := m["matrix_results"].([]any)[0].(map[string]any)["stage_metrics"].([]any)
	for i, want := range []float64{10, 14} {
		if got := stages[i].(map[string]any)["metrics"].(map[string]any)["request_count"]; got != want {
			t.Fatalf("stage %d request_count %v, want %v", i, got, want)
		}
	}
	byWorker := map[float64]int{}
	for _, rec := range records(t, h, id) {
		meta := rec["metadata"].(map[string]any)
		if _, ok := meta["seq"]; ok {
			t.Fatal("the merged artifact kept the workers' stage numbers")
		}
		if _, ok := meta["inter_token_ms"]; ok {
			t.Fatal("the merged artifact kept the inter-token gaps")
		}
		byWorker[meta["worker"].(float64)]++
	}
	if byWorker[0] != 12 || byWorker[1] != 12 {
		t.Fatalf("records per worker %v, want 12 each", byWorker)
	}
	// Both worker records ended succeeded, each with its own counts.
	for k := range 2 {
		w, err := h.runs.LoadWorker(context.Background(), evalrun.WorkerID(id, k))
		if err != nil {
			t.Fatal(err)
		}
		if w.Status != evalrun.WorkerSucceeded || w.Completed != 12 || w.OwnerInstanceID == "" {
			t.Fatalf("worker %d: %+v", k, w)
		}
	}
	// 2 warm-up + 24 measured requests reached the model.
	if n := len(model.prompts); n != 26 {
		t.Fatalf("the model saw %d requests, want 26", n)
	}
}

// A worker whose runner stops renewing its lease before it reports fails the run, naming the
// worker and its runner; the other worker stops.
func TestLostWorkerFailsTheRun(t *testing.T) {
	model := &fakeModel{ttft: 5 * time.Millisecond, itl: 5 * time.Millisecond}
	h := start(t, model, parallel())
	id := h.create(t, `{"deployment_execution_id":"exec-1","parallelism":2,"matrix":[{"isl":8,"osl":40}],"warmup_requests":0,
		"concurrency_stages":[{"concurrency":1,"num_requests":100000}]}`)
	// Another instance ("ghost-pod") claims worker 1 before the owner fans out, then dies: its
	// short lease is never renewed. The run is still queued, so the owner has not started yet...
	ctx := context.Background()
	ws, err := h.runs.CreateWorkers(ctx, id, 2)
	if err != nil || len(ws) != 2 {
		t.Fatal(err)
	}
	lease, err := h.deps.Store.AcquireLease(ctx, evalrun.WorkerLeaseName(evalrun.WorkerID(id, 1)), "ghost-pod", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.runs.TransitionWorker(ctx, evalrun.WorkerID(id, 1), []string{evalrun.WorkerQueued}, evalrun.WorkerRunning, lease.Fence(),
		func(w *evalrun.Worker) error { w.OwnerInstanceID = "ghost-pod"; return nil }); err != nil {
		t.Fatal(err)
	}
	run := h.waitFor(t, id, 30*time.Second, terminal)
	msg := run.ErrorText()
	if run.Status != evalrun.StatusFailed || !strings.Contains(msg, "worker 1 of 2 was lost") || !strings.Contains(msg, "ghost-pod") {
		t.Fatalf("status %s error %q", run.Status, msg)
	}
	// Worker 0 ran (the run did start) and stops once the run failed.
	deadline := time.Now().Add(10 * time.Second)
	for {
		w0, err := h.runs.LoadWorker(ctx, evalrun.WorkerID(id, 0))
		if err == nil && w0.Terminal() {
			if w0.Status != evalrun.WorkerCancelled || w0.OwnerInstanceID == "" {
				t.Fatalf("worker 0: %+v", w0)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker 0 still %+v after its run failed", w0)
		}
		time.Sleep(20 * time.Millisecond)
	}
	w1, _ := h.runs.LoadWorker(ctx, evalrun.WorkerID(id, 1))
	if w1.Status != evalrun.WorkerFailed || !strings.Contains(w1.Error, "was lost") {
		t.Fatalf("worker 1: %+v", w1)
	}
}

// A cancel reaches every worker: each ends cancelled within about a second, the run ends
// cancelled with the records they sent merged as its partial result.
func TestParallelRunCancelStopsEveryWorker(t *testing.T) {
	h := start(t, &fakeModel{ttft: 10 * time.Millisecond, itl: 10 * time.Millisecond}, parallel())
	id := h.create(t, `{"deployment_execution_id":"exec-1","parallelism":2,"matrix":[{"isl":8,"osl":20}],"warmup_requests":0,
		"concurrency_stages":[{"concurrency":2,"num_requests":100000}]}`)
	h.waitFor(t, id, 20*time.Second, func(r *evalrun.Run) bool {
		return r.LiveMetrics != nil && r.LiveMetrics.CompletedRequests >= 8
	})
	asked := time.Now()
	h.cancel(t, id)
	run := h.waitFor(t, id, 15*time.Second, terminal)
	if run.Status != evalrun.StatusCancelled {
		t.Fatalf("status %s error %q", run.Status, run.ErrorText())
	}
	t.Logf("cancelled after %s", time.Since(asked).Round(10*time.Millisecond))
	for k := range 2 {
		w, err := h.runs.LoadWorker(context.Background(), evalrun.WorkerID(id, k))
		if err != nil || w.Status != evalrun.WorkerCancelled {
			t.Fatalf("worker %d: %+v %v", k, w, err)
		}
	}
	var m map[string]any
	evalrun.Decode(run.Metrics, &m)
	if n, _ := m["request_count"].(float64); n < 8 || int(n) != len(records(t, h, id)) {
		t.Fatalf("partial result of %v requests, artifact %d", m["request_count"], len(records(t, h, id)))
	}
}

// Two workers each send two repetitions; the owner's merge keeps them apart: two repetitions of
// both workers' requests, each with its bootstrap replicates.
func TestParallelRunWithRepetitions(t *testing.T) {
	h := start(t, &fakeModel{ttft: 10 * time.Millisecond, itl: 2 * time.Millisecond}, parallel())
	id := h.create(t, `{"deployment_execution_id":"exec-1","parallelism":2,"repetitions":2,"matrix":[{"isl":16,"osl":6}],
		"concurrency_stages":[{"concurrency":2,"num_requests":5}],"warmup_requests":1}`)
	m := doc(t, h.waitFor(t, id, 60*time.Second, terminal))
	if m["status"] != "succeeded" {
		t.Fatalf("status %v error %v", m["status"], m["error"])
	}
	if metrics := m["metrics"].(map[string]any); metrics["request_count"] != 20.0 || metrics["repetitions"] != 2.0 {
		t.Fatalf("request_count %v repetitions %v, want 2 workers x 2 repetitions x 5", metrics["request_count"], metrics["repetitions"])
	}
	reps := m["repetition_results"].([]any)
	boot := m["bootstrap"].(map[string]any)["repetitions"].([]any)
	if len(reps) != 2 || reps[0].(map[string]any)["request_count"] != 10.0 || reps[1].(map[string]any)["request_count"] != 10.0 || len(boot) != 2 {
		t.Fatalf("repetition_results %v, %d bootstrap repetitions", reps, len(boot))
	}
	byRep := map[float64]int{}
	for _, rec := range records(t, h, id) {
		byRep[rec["metadata"].(map[string]any)["repetition"].(float64)]++
	}
	if byRep[0] != 10 || byRep[1] != 10 {
		t.Fatalf("records by repetition %v", byRep)
	}
}
