package workfloworchestrator

import (
	"context"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/secret"
	"github.com/lensfn/lensfn/runtime/state"
)

// A case's run created again after it ended (an advance that found the run missing before
// the first creation landed carries out its create late) leaves the deployment's uses as the
// run's end left them: none. Taking the use again would hold the execution for good.
func TestARepeatedCreateAfterTheRunEndedTakesNoUse(t *testing.T) {
	ctx := context.Background()
	key := secret.NewKey()
	d := fntest.Deps(t, Name, fntest.Env(t, map[string]string{"LENS_SECRET_KEY": key}))
	sealer, _ := secret.FromEnv(key)
	o := New(d, Settings{SweepInterval: time.Hour}, sealer)
	_, session, err := o.inv.CreateCluster(ctx, inventory.ClusterSpec{Name: "local", Kind: inventory.ClusterLocal})
	if err != nil {
		t.Fatal(err)
	}
	exec := inventory.Execution{ID: inventory.NewID(), ClusterSessionID: session.ID, Model: "m", Endpoint: "http://127.0.0.1:1/v1",
		Ownership: inventory.OwnershipEvaluation}
	if err := o.inv.PutExecution(ctx, exec, ""); err != nil {
		t.Fatal(err)
	}
	target := evalrun.Target{ExecutionID: exec.ID, ClusterSessionID: session.ID, Model: "m", Endpoint: exec.Endpoint,
		Ownership: inventory.OwnershipEvaluation, Status: "ready"}
	req, raw, err := evalrun.ParseRequest([]byte(`{"deployment_execution_id":"` + exec.ID + `","matrix":[{"isl":8,"osl":4}]}`))
	if err != nil {
		t.Fatal(err)
	}
	runID := evalrun.NewID()
	newRun := func() *evalrun.Run { return evalrun.BuildRun(runID, req, raw, target) }
	uses := func() int {
		t.Helper()
		e, err := o.inv.Execution(ctx, exec.ID)
		if err != nil {
			t.Fatal(err)
		}
		return e.ActiveUses
	}

	if err := o.createRun(ctx, newRun(), target); err != nil {
		t.Fatal(err)
	}
	if n := uses(); n != 1 {
		t.Fatalf("%d uses after the create, want 1", n)
	}
	// The runner runs it and ends it: its use given back, then its terminal status.
	if _, err := o.runs.Transition(ctx, runID, []string{evalrun.StatusQueued}, evalrun.StatusRunning, state.Fence{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := o.inv.ReleaseUse(ctx, exec.ID, runID); err != nil {
		t.Fatal(err)
	}
	if _, err := o.runs.Transition(ctx, runID, []string{evalrun.StatusRunning}, evalrun.StatusSucceeded, state.Fence{}, nil); err != nil {
		t.Fatal(err)
	}
	// The late repeat.
	if err := o.createRun(ctx, newRun(), target); err != nil {
		t.Fatal(err)
	}
	if n := uses(); n != 0 {
		t.Fatalf("%d uses after a repeated create of the ended run, want 0", n)
	}
}
