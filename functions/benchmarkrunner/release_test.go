package benchmarkrunner_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/benchmarkrunner"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/secret"
	"github.com/lensfn/lensfn/runtime/state"
)

// usesAtTheEnd is a store that notes, as a run's terminal status is about to be written, how
// many uses its deployment execution still has.
type usesAtTheEnd struct {
	state.Store
	inv  *inventory.Repo
	mu   sync.Mutex
	seen map[string]int // run id -> the execution's uses at its terminal write
}

func (s *usesAtTheEnd) Update(ctx context.Context, r state.Record, opts state.UpdateOptions) (state.Record, error) {
	if r.Kind == evalrun.Kind && evalrun.Terminal(r.Status) {
		if run, err := (&evalrun.Repo{Store: s.Store}).Load(ctx, r.ID); err == nil {
			if e, err := s.inv.Execution(ctx, evalrun.Str(run.DeploymentExecutionID)); err == nil {
				s.mu.Lock()
				s.seen[r.ID] = e.ActiveUses
				s.mu.Unlock()
			}
		}
	}
	return s.Store.Update(ctx, r, opts)
}

// A run gives back its use of the deployment before its terminal status is written, both when
// it finishes and when the lost-runner sweep ends it: whoever sees it ended (the orchestrator
// about to clean the deployment, a user deleting it) finds the deployment free.
func TestARunReleasesItsDeploymentBeforeItEnds(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(&fakeModel{ttft: time.Millisecond, itl: time.Millisecond})
	t.Cleanup(srv.Close)
	key := secret.NewKey()
	deps := fntest.Deps(t, benchmarkrunner.Name, fntest.Env(t, map[string]string{"LENS_SECRET_KEY": key}))
	sealer, _ := secret.FromEnv(key)
	inv := &inventory.Repo{Store: deps.Store, Sealer: sealer}
	store := &usesAtTheEnd{Store: deps.Store, inv: inv, seen: map[string]int{}}
	deps.Store = store
	runs := &evalrun.Repo{Store: store, Sealer: sealer, DataDir: deps.Config.DataDir}

	_, session, err := inv.CreateCluster(ctx, inventory.ClusterSpec{Name: "local", Kind: inventory.ClusterLocal})
	if err != nil {
		t.Fatal(err)
	}
	// One run the runner runs to its end; one whose runner is lost (running, no lease). Each
	// has a deployment of its own.
	finished, lost := evalrun.NewID(), evalrun.NewID()
	execs := map[string]string{}
	for _, id := range []string{finished, lost} {
		exec := inventory.Execution{ID: inventory.NewID(), ClusterSessionID: session.ID, Model: "fake-model", Endpoint: srv.URL + "/v1",
			Ownership: inventory.OwnershipEvaluation}
		if err := inv.PutExecution(ctx, exec, ""); err != nil {
			t.Fatal(err)
		}
		execs[id] = exec.ID
		req, raw, err := evalrun.ParseRequest([]byte(`{"deployment_execution_id":"` + exec.ID + `","matrix":[{"isl":8,"osl":4}],
			"warmup_requests":0,"concurrency_stages":[{"concurrency":1,"num_requests":2}]}`))
		if err != nil {
			t.Fatal(err)
		}
		run := evalrun.BuildRun(id, req, raw, evalrun.Target{ExecutionID: exec.ID, Model: "fake-model", Endpoint: exec.Endpoint, Status: "ready"})
		if id == lost {
			run.Status = evalrun.StatusRunning
			run.OwnerInstanceID = evalrun.Ptr("a-dead-instance")
		}
		if err := inv.AcquireUse(ctx, exec.ID, id); err != nil { // as whoever creates a run does, first
			t.Fatal(err)
		}
		if err := runs.Create(ctx, run, ""); err != nil {
			t.Fatal(err)
		}
	}

	runner := benchmarkrunner.NewRunner(deps, fast(), runs)
	sweepCtx, stop := context.WithCancel(ctx)
	swept := make(chan struct{})
	go func() { defer close(swept); runner.Sweep(sweepCtx) }()
	t.Cleanup(func() { stop(); <-swept; _ = runner.Close(context.Background()) })

	for _, id := range []string{finished, lost} {
		deadline := time.Now().Add(30 * time.Second)
		for {
			run, err := runs.Load(ctx, id)
			if err == nil && evalrun.Terminal(run.Status) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %s never ended", id)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	for name, id := range map[string]string{"finished": finished, "lost": lost} {
		if n, ok := store.seen[id]; !ok || n != 0 {
			t.Errorf("the %s run's terminal status was written with %d uses of its deployment (seen: %v), want 0", name, n, ok)
		}
		if e, _ := inv.Execution(ctx, execs[id]); e.ActiveUses != 0 {
			t.Errorf("the %s run left %d uses", name, e.ActiveUses)
		}
	}
}

// changesBeforeReap is a store that moves a run on (running -> cancelling, still active) just
// before the lost-runner sweep's transition of it, and notes the run's deployment uses when the
// sweep next lists the active runs.
type changesBeforeReap struct {
	state.Store
	inv         *inventory.Repo
	runID, exec string
	once        sync.Once
	moved       atomic.Bool
	mu          sync.Mutex
	usesAfter   []int // the execution's uses at each listing after the run moved on
}

func (s *changesBeforeReap) Update(ctx context.Context, r state.Record, opts state.UpdateOptions) (state.Record, error) {
	if r.Kind == evalrun.Kind && r.ID == s.runID {
		s.once.Do(func() {
			direct := &evalrun.Repo{Store: s.Store}
			if _, err := direct.Transition(ctx, s.runID, []string{evalrun.StatusRunning}, evalrun.StatusCancelling, state.Fence{}, nil); err != nil {
				panic(err)
			}
			s.moved.Store(true)
		})
	}
	return s.Store.Update(ctx, r, opts)
}

func (s *changesBeforeReap) List(ctx context.Context, q state.Query) (state.Page, error) {
	if q.Kind == evalrun.Kind && s.moved.Load() {
		if e, err := s.inv.Execution(ctx, s.exec); err == nil {
			s.mu.Lock()
			s.usesAfter = append(s.usesAfter, e.ActiveUses)
			s.mu.Unlock()
		}
	}
	return s.Store.List(ctx, q)
}

// A run the lost-runner sweep could not end (its status moved on between the listing and the
// transition) keeps its use of the deployment while it is still active: the sweep gave the use
// back first, as it does for a run it ends, and must take it back, or the orchestrator could
// delete a deployment a live run still holds.
func TestARunTheSweepCouldNotEndKeepsItsDeployment(t *testing.T) {
	ctx := context.Background()
	key := secret.NewKey()
	deps := fntest.Deps(t, benchmarkrunner.Name, fntest.Env(t, map[string]string{"LENS_SECRET_KEY": key}))
	sealer, _ := secret.FromEnv(key)
	inv := &inventory.Repo{Store: deps.Store, Sealer: sealer}
	_, session, err := inv.CreateCluster(ctx, inventory.ClusterSpec{Name: "local", Kind: inventory.ClusterLocal})
	if err != nil {
		t.Fatal(err)
	}
	exec := inventory.Execution{ID: inventory.NewID(), ClusterSessionID: session.ID, Model: "fake-model", Endpoint: "http://127.0.0.1:9/v1",
		Ownership: inventory.OwnershipEvaluation}
	if err := inv.PutExecution(ctx, exec, ""); err != nil {
		t.Fatal(err)
	}
	id := evalrun.NewID()
	store := &changesBeforeReap{Store: deps.Store, inv: inv, runID: id, exec: exec.ID}
	deps.Store = store
	runs := &evalrun.Repo{Store: store, Sealer: sealer, DataDir: deps.Config.DataDir}
	req, raw, err := evalrun.ParseRequest([]byte(`{"deployment_execution_id":"` + exec.ID + `","matrix":[{"isl":8,"osl":4}]}`))
	if err != nil {
		t.Fatal(err)
	}
	run := evalrun.BuildRun(id, req, raw, evalrun.Target{ExecutionID: exec.ID, Model: "fake-model", Endpoint: exec.Endpoint, Status: "ready"})
	run.Status = evalrun.StatusRunning
	run.OwnerInstanceID = evalrun.Ptr("a-dead-instance")
	if err := inv.AcquireUse(ctx, exec.ID, id); err != nil {
		t.Fatal(err)
	}
	// Created through the store beneath, so the wrapper's once is spent on the sweep's write.
	if err := (&evalrun.Repo{Store: deps.Store.(*changesBeforeReap).Store, Sealer: sealer, DataDir: deps.Config.DataDir}).Create(ctx, run, ""); err != nil {
		t.Fatal(err)
	}

	runner := benchmarkrunner.NewRunner(deps, fast(), runs)
	sweepCtx, stop := context.WithCancel(ctx)
	swept := make(chan struct{})
	go func() { defer close(swept); runner.Sweep(sweepCtx) }()
	t.Cleanup(func() { stop(); <-swept; _ = runner.Close(context.Background()) })

	// The sweep's first pass meets the moved-on run; its next pass ends it (cancelling, no
	// lease: cancelled). Between the two the run is active and must hold its use.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if r, err := runs.Load(ctx, id); err == nil && evalrun.Terminal(r.Status) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run never ended")
		}
		time.Sleep(20 * time.Millisecond)
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	// The first listing after the sweep met the moved-on run comes before the pass that ends
	// it: the run was cancelling then and must have held its use.
	if len(store.usesAfter) == 0 || store.usesAfter[0] != 1 {
		t.Fatalf("uses of the deployment at the listings after the sweep met the still-active run: %v, want 1 first", store.usesAfter)
	}
	if e, _ := inv.Execution(ctx, exec.ID); e.ActiveUses != 0 {
		t.Errorf("the run left %d uses after it ended", e.ActiveUses)
	}
}
