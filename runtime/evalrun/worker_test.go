package evalrun

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/state"
)

// Workers are created once (a second fan-out keeps them), move by fenced transitions, and go
// with their run.
func TestWorkersLiveAndDieWithTheirRun(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	run := build(t, `{"deployment_execution_id":"exec-1","parallelism":3}`)
	if err := r.Create(ctx, run, ""); err != nil {
		t.Fatal(err)
	}
	ws, err := r.CreateWorkers(ctx, run.ID, 3)
	if err != nil || len(ws) != 3 {
		t.Fatalf("%d workers, %v", len(ws), err)
	}
	lease, err := r.Store.AcquireLease(ctx, WorkerLeaseName(ws[1].ID()), "pod-a", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.TransitionWorker(ctx, ws[1].ID(), []string{WorkerQueued}, WorkerRunning, lease.Fence(), func(w *Worker) error {
		w.OwnerInstanceID = "pod-a"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	again, err := r.CreateWorkers(ctx, run.ID, 3)
	if err != nil || again[1].Status != WorkerRunning || again[1].OwnerInstanceID != "pod-a" || again[0].Status != WorkerQueued {
		t.Fatalf("a second fan-out: %+v %v", again, err)
	}
	queued, err := r.ListWorkers(ctx, 10, WorkerQueued)
	if err != nil || len(queued) != 2 {
		t.Fatalf("queued workers %d, %v", len(queued), err)
	}
	// A stale fence cannot end the worker.
	if _, err := r.TransitionWorker(ctx, ws[1].ID(), []string{WorkerRunning}, WorkerSucceeded, state.Fence{Lease: lease.Name, Token: lease.Token - 1}, nil); err == nil {
		t.Fatal("a stale fence ended the worker")
	}
	if err := r.Delete(ctx, run.ID, 0); err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if _, err := r.LoadWorker(ctx, w.ID()); !errors.Is(err, state.ErrNotFound) {
			t.Fatalf("worker %d survived its run: %v", w.Index, err)
		}
	}
}
