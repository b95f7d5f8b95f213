package benchmarkrunner_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/benchmarkrunner"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/secret"
	"github.com/lensfn/lensfn/runtime/state"
)

// endsBetweenPickAndRead is a store whose listing of active runs lets a run end between the two
// round trips of the Redis store's List (the ids from the status index, then the records): the
// run is listed as active but read with its terminal status, its lease already released.
type endsBetweenPickAndRead struct {
	state.Store
	end      func(ctx context.Context, id string)
	once     sync.Once
	listings atomic.Int32 // listings of active runs done
}

func (s *endsBetweenPickAndRead) List(ctx context.Context, q state.Query) (state.Page, error) {
	page, err := s.Store.List(ctx, q)
	if err != nil || q.Kind != evalrun.Kind || !slices.Contains(q.Status, evalrun.StatusRunning) {
		return page, err
	}
	defer s.listings.Add(1)
	if len(page.Records) == 0 {
		return page, nil
	}
	s.once.Do(func() { s.end(ctx, page.Records[0].ID) })
	for i, rec := range page.Records {
		if cur, err := s.Store.Get(ctx, rec.Kind, rec.ID); err == nil {
			page.Records[i] = cur
		}
	}
	return page, nil
}

// A run that ends while the lost-runner sweep lists the active runs keeps its outcome: the sweep
// saw it cancelled (read after it ended) and must not turn it into "runner lost" (seen under load:
// a cancelled run ended failed, "The runner was lost: <this instance> stopped renewing its lease").
func TestARunEndingWhileTheSweepListsKeepsItsOutcome(t *testing.T) {
	key := secret.NewKey()
	deps := fntest.Deps(t, benchmarkrunner.Name, fntest.Env(t, map[string]string{"LENS_SECRET_KEY": key}))
	sealer, _ := secret.FromEnv(key)
	direct := &evalrun.Repo{Store: deps.Store, Sealer: sealer, DataDir: deps.Config.DataDir}
	store := &endsBetweenPickAndRead{Store: deps.Store, end: func(ctx context.Context, id string) {
		// What finish does for a cancelled run: the terminal status, then the lease is released
		// and the pool forgets the id (this run held none here).
		if _, err := direct.Transition(ctx, id, []string{evalrun.StatusRunning}, evalrun.StatusCancelled, state.Fence{}, nil); err != nil {
			t.Error(err)
		}
	}}
	deps.Store = store
	runs := &evalrun.Repo{Store: store, Sealer: sealer, DataDir: deps.Config.DataDir}

	req, raw, err := evalrun.ParseRequest([]byte(`{"deployment_execution_id":"exec-1","matrix":[{"isl":8,"osl":4}]}`))
	if err != nil {
		t.Fatal(err)
	}
	run := evalrun.BuildRun(evalrun.NewID(), req, raw, evalrun.Target{ExecutionID: "exec-1", Model: "fake-model", Endpoint: "http://127.0.0.1:9/v1", Status: "ready"})
	run.Status = evalrun.StatusRunning
	run.OwnerInstanceID = evalrun.Ptr(deps.Config.InstanceID)
	if err := runs.Create(context.Background(), run, ""); err != nil {
		t.Fatal(err)
	}

	runner := benchmarkrunner.NewRunner(deps, fast(), runs)
	ctx, stop := context.WithCancel(context.Background())
	swept := make(chan struct{})
	go func() { defer close(swept); runner.Sweep(ctx) }()
	t.Cleanup(func() { stop(); <-swept; _ = runner.Close(context.Background()) })

	// The second listing begins only after the sweep went through the first one's runs.
	deadline := time.Now().Add(10 * time.Second)
	for store.listings.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the lost-runner sweep did not list the active runs twice in 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	got, err := runs.Get(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != evalrun.StatusCancelled || got.ErrorText() != "" {
		t.Fatalf("status %s error %q, want the cancelled outcome kept", got.Status, got.ErrorText())
	}
}
