package tracereplayer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/simtask"
	"github.com/lensfn/lensfn/runtime/state"
)

func testDeps(t *testing.T) fn.Deps {
	t.Helper()
	return fntest.Deps(t, Name, fntest.Env(t, nil))
}

func queue(t *testing.T, repo *simtask.Repo) string {
	t.Helper()
	id := simtask.NewID()
	task := &simtask.Task{ID: id, Name: "t", Scenario: "chat", Status: simtask.StatusQueued, EndpointURL: "http://127.0.0.1:9/v1",
		ModelName: "m", TaskDir: repo.TaskDir(id), CreatedAt: simtask.Now(), ConfigurationIDs: []string{},
		Simulation: simtask.Simulation{Backend: Backend, DurationSeconds: 1, BackendOptions: map[string]any{}}}
	if err := repo.Create(context.Background(), task, ""); err != nil {
		t.Fatal(err)
	}
	return id
}

func statusOf(t *testing.T, repo *simtask.Repo, id string) *simtask.Task {
	t.Helper()
	task, err := repo.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// startRunner builds a runner and runs its sweep as the function's Start hook would, until the
// test ends.
func startRunner(t *testing.T, deps fn.Deps, s Settings, repo *simtask.Repo, replay func(context.Context, *Run) (events.TaskReplayed, error)) *Runner {
	t.Helper()
	r := NewRunner(deps, s, repo, replay)
	ctx, cancel := context.WithCancel(context.Background())
	swept := make(chan struct{})
	go func() { defer close(swept); r.Sweep(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-swept
		_ = r.Close(context.Background())
	})
	return r
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestRunnerRunsQueuedTasksWithinItsSlots: the sweep starts queued tasks oldest first, one at a
// time with one slot, and hands each replay to the analyzer.
func TestRunnerRunsQueuedTasksWithinItsSlots(t *testing.T) {
	deps := testDeps(t)
	repo := &simtask.Repo{Store: deps.Store, DataDir: deps.Config.DataDir}
	var mu sync.Mutex
	release := map[string]chan struct{}{}
	replay := func(ctx context.Context, run *Run) (events.TaskReplayed, error) {
		mu.Lock()
		ch := make(chan struct{})
		release[run.Task.ID] = ch
		mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return events.TaskReplayed{}, ctx.Err()
		}
		return events.TaskReplayed{TaskID: run.Task.ID, RecordsPath: "/tmp/x", Requests: 3, Outcome: "completed", Message: "every scheduled request was sent"}, nil
	}
	first, second := queue(t, repo), queue(t, repo)
	startRunner(t, deps, Settings{MaxConcurrent: 1, LeaseTTL: 2 * time.Second, SweepInterval: 50 * time.Millisecond, PollInterval: 50 * time.Millisecond}, repo, replay)

	waitFor(t, "the first task to run", func() bool { return statusOf(t, repo, first).Status == simtask.StatusRunning })
	time.Sleep(200 * time.Millisecond)
	if s := statusOf(t, repo, second).Status; s != simtask.StatusQueued {
		t.Fatalf("a second task started with one slot: %s", s)
	}
	running := statusOf(t, repo, first)
	if running.OwnerInstanceID == nil || *running.OwnerInstanceID != deps.Config.InstanceID || running.StartedAt == nil ||
		running.OwnerPID == nil || running.BackendVersion == nil {
		t.Fatalf("ownership not recorded: %+v", running)
	}
	if holder, err := deps.Store.LeaseHolder(context.Background(), simtask.LeaseName(first)); err != nil || holder.Owner != deps.Config.InstanceID {
		t.Fatalf("lease %+v %v", holder, err)
	}
	mu.Lock()
	close(release[first])
	mu.Unlock()
	waitFor(t, "the first task to reach analysis", func() bool {
		task := statusOf(t, repo, first)
		// The records path is derived from the id whatever the replay reported.
		return task.Internal.Phase == "analyzing" && task.Internal.RecordsPath == filepath.Join(repo.TaskDir(first), RecordsFile)
	})
	// The lease is released right after the hand-off is written (not in the same write).
	waitFor(t, "the runner to release the lease after handing the task on", func() bool {
		_, err := deps.Store.LeaseHolder(context.Background(), simtask.LeaseName(first))
		return err != nil
	})
	waitFor(t, "the second task to run", func() bool { return statusOf(t, repo, second).Status == simtask.StatusRunning })
}

// TestLostRunnerIsFailed: a running task whose lease nobody renews is failed with a message
// saying the runner was lost; one in its analysis phase is left to the analyzer.
func TestLostRunnerIsFailed(t *testing.T) {
	deps := testDeps(t)
	repo := &simtask.Repo{Store: deps.Store, DataDir: deps.Config.DataDir}
	ctx := context.Background()
	lost, analyzing := queue(t, repo), queue(t, repo)
	for _, id := range []string{lost, analyzing} {
		lease, err := deps.Store.AcquireLease(ctx, simtask.LeaseName(id), "dead-pod", 300*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		phase := "replaying"
		if id == analyzing {
			phase = "analyzing"
		}
		owner := "dead-pod"
		if _, err := repo.Transition(ctx, id, []string{simtask.StatusQueued}, simtask.StatusRunning, lease.Fence(), func(t *simtask.Task) error {
			t.Internal.Phase, t.OwnerInstanceID = phase, &owner
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	never := func(context.Context, *Run) (events.TaskReplayed, error) {
		t.Error("nothing is queued")
		return events.TaskReplayed{}, nil
	}
	startRunner(t, deps, Settings{MaxConcurrent: 1, LeaseTTL: time.Second, SweepInterval: 50 * time.Millisecond, PollInterval: 50 * time.Millisecond}, repo, never)
	waitFor(t, "the lost task to fail", func() bool { return statusOf(t, repo, lost).Status == simtask.StatusFailed })
	task := statusOf(t, repo, lost)
	if task.ErrorMessage == nil || !strings.Contains(*task.ErrorMessage, "runner was lost") || !strings.Contains(*task.ErrorMessage, "dead-pod") {
		t.Fatalf("%v", task.ErrorMessage)
	}
	time.Sleep(200 * time.Millisecond)
	if s := statusOf(t, repo, analyzing).Status; s != simtask.StatusRunning {
		t.Fatalf("a task waiting for analysis was reaped: %s", s)
	}
}

// TestStaleRunnerCannotWrite: after another owner took the lease, the old runner's fenced writes
// are refused.
func TestStaleRunnerCannotWrite(t *testing.T) {
	deps := testDeps(t)
	repo := &simtask.Repo{Store: deps.Store, DataDir: deps.Config.DataDir}
	ctx := context.Background()
	id := queue(t, repo)
	old, err := deps.Store.AcquireLease(ctx, simtask.LeaseName(id), "old", 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(250 * time.Millisecond)
	if _, err := deps.Store.AcquireLease(ctx, simtask.LeaseName(id), "new", time.Second); err != nil {
		t.Fatal(err)
	}
	_, err = repo.Patch(ctx, id, old.Fence(), func(t *simtask.Task) error { t.ProgressPercent = 50; return nil })
	if !errors.Is(err, state.ErrStaleFence) {
		t.Fatalf("a runner that lost its lease could still write: %v", err)
	}
}

// TestConcurrentOffersStartATaskOnce: the event and the sweep offering one task at the same time
// must not start it twice, nor let the losing attempt release the winner's lease.
func TestConcurrentOffersStartATaskOnce(t *testing.T) {
	deps := testDeps(t)
	repo := &simtask.Repo{Store: deps.Store, DataDir: deps.Config.DataDir}
	var mu sync.Mutex
	runs := 0
	release := make(chan struct{})
	replay := func(ctx context.Context, run *Run) (events.TaskReplayed, error) {
		mu.Lock()
		runs++
		mu.Unlock()
		select {
		case <-release:
		case <-ctx.Done():
		}
		return events.TaskReplayed{TaskID: run.Task.ID, Outcome: "completed"}, nil
	}
	r := startRunner(t, deps, Settings{MaxConcurrent: 4, LeaseTTL: time.Second, SweepInterval: time.Hour, PollInterval: 50 * time.Millisecond}, repo, replay)
	defer close(release)
	id := queue(t, repo)
	var wg sync.WaitGroup
	started := make(chan bool, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := r.pool.TryStart(context.Background(), id)
			if err != nil {
				t.Error(err)
			}
			started <- ok
		}()
	}
	wg.Wait()
	close(started)
	n := 0
	for ok := range started {
		if ok {
			n++
		}
	}
	// The runner's own start-up sweep may win before any of the eight (then none of them does);
	// exactly one replay is checked below either way.
	if n > 1 {
		t.Fatalf("%d attempts started the task", n)
	}
	time.Sleep(1500 * time.Millisecond) // past the lease TTL: it must still be held and renewed
	if holder, err := deps.Store.LeaseHolder(context.Background(), simtask.LeaseName(id)); err != nil || holder.Owner != deps.Config.InstanceID {
		t.Fatalf("the running task lost its lease: %+v %v", holder, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if runs != 1 {
		t.Fatalf("%d replays", runs)
	}
}

// TestQueuedTasksRunBackToBack: with one slot and a sweep tick far away, short tasks still run
// one after another: a freed slot starts the next queued task at once.
func TestQueuedTasksRunBackToBack(t *testing.T) {
	deps := testDeps(t)
	repo := &simtask.Repo{Store: deps.Store, DataDir: deps.Config.DataDir}
	const n = 12
	ids := make([]string, n)
	for i := range ids {
		ids[i] = queue(t, repo)
	}
	quick := func(_ context.Context, run *Run) (events.TaskReplayed, error) {
		return events.TaskReplayed{TaskID: run.Task.ID, RecordsPath: "/tmp/x", Outcome: "completed", Message: "every scheduled request was sent"}, nil
	}
	startRunner(t, deps, Settings{MaxConcurrent: 1, LeaseTTL: 2 * time.Second, SweepInterval: time.Hour, PollInterval: 50 * time.Millisecond}, repo, quick)
	waitFor(t, "every task to be replayed without a sweep tick", func() bool {
		for _, id := range ids {
			if statusOf(t, repo, id).Internal.Phase != "analyzing" {
				return false
			}
		}
		return true
	})
}

// TestReplayFinishedDuringAnOutageIsHandedOff: a replay that ends while the store is down, and
// stays down longer than the lease TTL, is handed to the analyzer once the store is back, with
// its records and outcome; it is never failed as "runner lost".
func TestReplayFinishedDuringAnOutageIsHandedOff(t *testing.T) {
	store := fntest.NewOutage(t)
	deps := fntest.Deps(t, Name, fntest.Env(t, map[string]string{"REDIS_URL": store.URL}))
	repo := &simtask.Repo{Store: deps.Store, DataDir: deps.Config.DataDir}
	id := queue(t, repo)
	release := make(chan struct{})
	replay := func(ctx context.Context, run *Run) (events.TaskReplayed, error) {
		<-release
		return events.TaskReplayed{TaskID: run.Task.ID, RecordsPath: "/tmp/records", Requests: 339, Outcome: "completed",
			Message: "every scheduled request was sent"}, nil
	}
	if err := os.MkdirAll(repo.TaskDir(id), 0o700); err != nil {
		t.Fatal(err)
	}
	startRunner(t, deps, Settings{MaxConcurrent: 1, LeaseTTL: 600 * time.Millisecond, SweepInterval: 100 * time.Millisecond, PollInterval: 50 * time.Millisecond}, repo, replay)
	waitFor(t, "the task to run", func() bool { return statusOf(t, repo, id).Status == simtask.StatusRunning })
	store.Cut()
	close(release)
	time.Sleep(1500 * time.Millisecond) // the outage outlasts the lease
	store.Restore()
	waitFor(t, "the hand-off", func() bool {
		task, err := repo.Get(context.Background(), id)
		return err == nil && (task.Internal.Phase == "analyzing" || task.Status != simtask.StatusRunning)
	})
	task := statusOf(t, repo, id)
	// The records path is derived from the task id, whatever the replay reported.
	if task.Status != simtask.StatusRunning || task.Internal.Phase != "analyzing" || task.Internal.RecordsPath != filepath.Join(repo.TaskDir(id), RecordsFile) ||
		task.Internal.ReplayMessage != "every scheduled request was sent" {
		t.Fatalf("the finished replay was not handed off: %s %q %v", task.Status, task.Internal.Phase, task.ErrorMessage)
	}
}

// TestLostRunnerLeavesItsReplayOnDisk: the sweep hands off what a dead runner left instead of
// failing the task: a finished replay's note as it was, a cut-short replay's records as a
// partial result (cancelled when a stop had been requested).
func TestLostRunnerLeavesItsReplayOnDisk(t *testing.T) {
	deps := testDeps(t)
	repo := &simtask.Repo{Store: deps.Store, DataDir: deps.Config.DataDir}
	ctx := context.Background()
	finished, crashed, stopped := queue(t, repo), queue(t, repo), queue(t, repo)
	for _, id := range []string{finished, crashed, stopped} {
		lease, err := deps.Store.AcquireLease(ctx, simtask.LeaseName(id), "dead-pod", 300*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		owner := "dead-pod"
		if _, err := repo.Transition(ctx, id, []string{simtask.StatusQueued}, simtask.StatusRunning, lease.Fence(), func(t *simtask.Task) error {
			t.Internal.Phase, t.OwnerInstanceID, t.Internal.CancelRequested = "replaying", &owner, id == stopped
			t.ProgressPercent = 7.3 // 6 of 82 requests sent when the runner died
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		dir := repo.TaskDir(id)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, RecordsFile), []byte(`{"request_id":1}`+"\n"+`{"request_`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeHandOff(repo.TaskDir(finished), events.TaskReplayed{TaskID: finished, RecordsPath: "/done/records", Requests: 339,
		Outcome: "completed", Message: "every scheduled request was sent"}); err != nil {
		t.Fatal(err)
	}
	never := func(context.Context, *Run) (events.TaskReplayed, error) {
		return events.TaskReplayed{}, errors.New("nothing is queued")
	}
	startRunner(t, deps, Settings{MaxConcurrent: 1, LeaseTTL: time.Second, SweepInterval: 50 * time.Millisecond, PollInterval: 50 * time.Millisecond}, repo, never)
	for _, id := range []string{finished, crashed, stopped} {
		waitFor(t, "the sweep to hand "+id+" off", func() bool {
			task := statusOf(t, repo, id)
			return task.Internal.Phase == "analyzing" || task.Status != simtask.StatusRunning
		})
	}
	if task := statusOf(t, repo, finished); task.Status != simtask.StatusRunning || task.Internal.RecordsPath != filepath.Join(repo.TaskDir(finished), RecordsFile) ||
		task.Internal.ReplayMessage != "every scheduled request was sent" {
		t.Fatalf("finished: %s %q %q", task.Status, task.Internal.RecordsPath, task.Internal.ReplayMessage)
	}
	task := statusOf(t, repo, crashed)
	if task.Status != simtask.StatusRunning || task.Internal.RecordsPath != filepath.Join(repo.TaskDir(crashed), RecordsFile) ||
		!strings.Contains(task.Internal.ReplayMessage, "runner was lost") || !strings.Contains(task.Internal.ReplayMessage, "partial result") {
		t.Fatalf("crashed: %s %q %q", task.Status, task.Internal.RecordsPath, task.Internal.ReplayMessage)
	}
	if task.ProgressPercent != 7.3 {
		t.Fatalf("the cut-short replay shows %v %%, want the 7.3 %% it got through", task.ProgressPercent)
	}
	if task := statusOf(t, repo, finished); task.ProgressPercent != 99 {
		t.Fatalf("the finished replay shows %v %% while analysed, want 99", task.ProgressPercent)
	}
	if task := statusOf(t, repo, stopped); task.Internal.ReplayMessage != "stopped by request" {
		t.Fatalf("stopped: %q", task.Internal.ReplayMessage)
	}
	if _, err := deps.Store.LeaseHolder(ctx, simtask.LeaseName(crashed)); err == nil {
		t.Fatal("the sweep kept the lease after handing the task to the analyzer")
	}
}
