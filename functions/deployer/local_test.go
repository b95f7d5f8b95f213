package deployer_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/functions/deployer"
	"github.com/lensfn/lensfn/runtime/cloudevent"
	"github.com/lensfn/lensfn/runtime/deployconfig"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/kubeconfig/kubeconfigtest"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/secret"
	"github.com/lensfn/lensfn/runtime/state"
)

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// binaries builds inference-sim and inference-router once for the package's tests.
func binaries(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "deployer-bin-")
		if binErr != nil {
			return
		}
		for _, name := range []string{deployer.SimulatorBinary, deployer.RouterBinary} {
			out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, name),
				"github.com/lensfn/lensfn/functions/"+strings.ReplaceAll(name, "-", "")+"/cmd/"+name).CombinedOutput() // the folder drops the hyphen
			if err != nil {
				binErr = &buildError{name, string(out)}
				return
			}
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binDir
}

type buildError struct{ name, out string }

func (b *buildError) Error() string { return "build " + b.name + ": " + b.out }

// sink records the events a deployer sends.
type sink struct {
	mu     sync.Mutex
	events []cloudevent.Event
	added  chan struct{}
}

func newSink(t *testing.T) (*sink, string) {
	s := &sink{added: make(chan struct{}, 100)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.events = append(s.events, cloudevent.Event{ID: r.Header.Get("Ce-Id"), Type: r.Header.Get("Ce-Type"), Data: body})
		s.mu.Unlock()
		s.added <- struct{}{}
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)
	return s, srv.URL
}

// wait returns the first event of the type, waiting for it.
func (s *sink) wait(t *testing.T, eventType string, within time.Duration) cloudevent.Event {
	t.Helper()
	deadline := time.After(within)
	for {
		s.mu.Lock()
		for _, e := range s.events {
			if e.Type == eventType {
				s.mu.Unlock()
				return e
			}
		}
		s.mu.Unlock()
		select {
		case <-s.added:
		case <-deadline:
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, e := range s.events {
				t.Logf("got %s: %s", e.Type, e.Data)
			}
			t.Fatalf("no %s within %s", eventType, within)
		}
	}
}

type harness struct {
	deps    fn.Deps
	repo    *inventory.Repo
	events  *sink
	session string
	env     map[string]string
	targets string // the local provider's Prometheus discovery directory
}

func newHarness(t *testing.T) *harness {
	sk, sinkURL := newSink(t)
	env := fntest.Env(t, map[string]string{"K_SINK": sinkURL, "LENS_SECRET_KEY": secret.NewKey(), "LENS_LEASE_TTL": "1s",
		"LENS_SWEEP_INTERVAL": "200ms", "LENS_DEPLOY_TIMEOUT": "15s", "LENS_BIN_DIR": binaries(t), "POD_NAME": "deployer-a"})
	deps := fntest.Deps(t, "deployer", env)
	if s, err := deployer.ReadSettings(deps.Config); err != nil || s.LeaseTTL != time.Second || s.SweepInterval != 200*time.Millisecond ||
		s.DeployTimeout != 15*time.Second || s.BinDir != env["LENS_BIN_DIR"] || s.LogDir != filepath.Join(env["LENS_DATA_DIR"], "logs", "deployments") {
		t.Fatalf("settings %+v, %v", s, err)
	}
	sealer, err := secret.FromEnv(env["LENS_SECRET_KEY"])
	if err != nil {
		t.Fatal(err)
	}
	repo := &inventory.Repo{Store: deps.Store, Sealer: sealer}
	_, session, err := repo.CreateCluster(context.Background(), inventory.ClusterSpec{Name: "local", Kind: inventory.ClusterLocal})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{deps: deps, repo: repo, events: sk, session: session.ID, env: env, targets: filepath.Join(t.TempDir(), "targets")}
}

// start runs a deployer instance named instance until the returned stop is called.
func (h *harness) start(t *testing.T, instance string) (*fn.Function, func()) {
	return h.startWith(t, instance, instanceOptions{})
}

// instanceOptions change what startWith runs: zero values keep start's.
type instanceOptions struct {
	store         func(state.Store) state.Store // wraps the instance's store (to freeze or fail it)
	local         func(*deployer.Local)         // adjusts the local provider
	leaseTTL      time.Duration
	sweepInterval time.Duration
}

func (h *harness) startWith(t *testing.T, instance string, o instanceOptions) (*fn.Function, func()) {
	d := h.deps
	d.Config.InstanceID = instance
	if o.store != nil {
		d.Store = o.store(d.Store)
	}
	s := deployer.Settings{LeaseTTL: cmp.Or(o.leaseTTL, time.Second), SweepInterval: cmp.Or(o.sweepInterval, 200*time.Millisecond),
		DeployTimeout: 15 * time.Second, BinDir: h.env["LENS_BIN_DIR"], LogDir: t.TempDir()}
	d.Metrics = fntest.Deps(t, "deployer-"+instance, h.env).Metrics
	local := &deployer.Local{BinDir: s.BinDir, LogDir: s.LogDir, ReadyTimeout: s.DeployTimeout, StopGrace: 3 * time.Second, TargetsDir: h.targets}
	if o.local != nil {
		o.local(local)
	}
	f := deployer.New(d, s, h.repo, map[string]deployer.Provider{deployer.ProviderLocal: local}).Function()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Start(ctx); close(done) }()
	time.Sleep(50 * time.Millisecond) // Start records its context before the first event
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	return f, stop
}

func (h *harness) configuration(t *testing.T, provider, content string) string {
	c, err := h.repo.CreateConfiguration(context.Background(), inventory.ConfigurationSpec{Name: "cfg", SchemaVersion: inventory.ConfigurationSchemaV1,
		Type: inventory.ConfigurationGuide, Format: inventory.ConfigurationFormat, ProviderRef: provider, Content: json.RawMessage(content)})
	if err != nil {
		t.Fatal(err)
	}
	return c.ID
}

func deliver(t *testing.T, f *fn.Function, eventType, id string, data any) error {
	raw, _ := json.Marshal(data)
	return f.Events[eventType](context.Background(), cloudevent.Event{ID: id, Type: eventType, Data: raw})
}

func record(t *testing.T, h *harness, id string) deployer.Deployment {
	rec, err := h.deps.Store.Get(context.Background(), deployer.Kind, id)
	if err != nil {
		t.Fatal(err)
	}
	var d deployer.Deployment
	_ = json.Unmarshal(rec.Doc, &d)
	d.Status = rec.Status
	return d
}

func pidAlive(pid int) bool {
	raw, err := os.ReadFile("/proc/" + itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return f[0] != "Z" && f[0] != "X"
}

func itoa(i int) string { return strconv.Itoa(i) }

const optimized2 = `{"model":{"name":"sim-model"},"decode":{"replicas":2,"max_num_seqs":16},"router":{"profile":"optimized"},
	"simulator":{"latency-calculator":"per-token","prefill-time-per-token":"0.01ms","inter-token-latency":"0.1ms","block-size":16,"enable-kvcache":true}}`

// A deployment.requested for a 2-replica optimized-baseline brings up two simulators and a
// router; the execution is ready (ownership evaluation) and answers a chat completion through
// the router; cleanup leaves no process and no execution.
func TestLocalDeployAnswersAndCleansUp(t *testing.T) {
	h := newHarness(t)
	f, _ := h.start(t, "deployer-a")
	cfg := h.configuration(t, "optimized-baseline", optimized2)
	id := inventory.NewID()
	req := events.DeploymentRequested{ExecutionID: id, ConfigurationID: cfg, ClusterSessionID: h.session, CaseRef: "wf-1/guide-1"}
	if err := deliver(t, f, events.TypeDeploymentRequested, "e1", req); err != nil {
		t.Fatal(err)
	}
	var ready events.DeploymentReady
	if err := json.Unmarshal(h.events.wait(t, events.TypeDeploymentReady, 90*time.Second).Data, &ready); err != nil {
		t.Fatal(err)
	}
	if ready.CaseRef != "wf-1/guide-1" || len(ready.ReplicaEndpoints) != 2 || !strings.HasSuffix(ready.Endpoint, "/v1") ||
		!strings.HasSuffix(ready.BaselineURL, "/balanced/v1") || ready.Provider != "local" {
		t.Fatalf("ready = %+v", ready)
	}
	exec, err := h.repo.Execution(context.Background(), id)
	if err != nil || exec.Ownership != inventory.OwnershipEvaluation || exec.Status != inventory.StatusReady || exec.Endpoint != ready.Endpoint ||
		len(exec.ReplicaEndpoints) != 2 {
		t.Fatalf("execution = %+v %v", exec, err)
	}
	// Prometheus discovers the replicas (the serving endpoints) from the deployment's file.
	raw, err := os.ReadFile(filepath.Join(h.targets, id+".json"))
	var groups []struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	if err != nil || json.Unmarshal(raw, &groups) != nil || len(groups) != 1 || len(groups[0].Targets) != 2 ||
		"http://"+groups[0].Targets[0] != ready.ReplicaEndpoints[0] || groups[0].Labels["lens_execution_id"] != id {
		t.Fatalf("discovery file %s (%v), replicas %v", raw, err, ready.ReplicaEndpoints)
	}
	d := record(t, h, id)
	roles := map[string]int{}
	for _, p := range d.Processes {
		roles[p.Role]++
		if !pidAlive(p.PID) {
			t.Fatalf("process %+v is not running", p)
		}
	}
	if roles["decode"] != 2 || roles["router"] != 1 {
		t.Fatalf("processes %+v", d.Processes)
	}
	res, err := http.Post(ready.Endpoint+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"sim-model","messages":[{"role":"user","content":"hello there"}],"max_tokens":4}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), `"chat.completion"`) || res.Header.Get("X-Inference-Router-Replica") == "" {
		t.Fatalf("chat through the router: %d %s", res.StatusCode, body)
	}
	// A redelivered request answers from the record without deploying again.
	if err := deliver(t, f, events.TypeDeploymentRequested, "e1-again", req); err != nil {
		t.Fatal(err)
	}
	if n := len(record(t, h, id).Processes); n != 3 {
		t.Fatalf("a redelivery changed the processes: %d", n)
	}

	// While a run uses the execution, cleanup fails and keeps everything for a retry.
	if err := h.repo.AcquireUse(context.Background(), id, "run-1"); err != nil {
		t.Fatal(err)
	}
	if err := deliver(t, f, events.TypeDeploymentCleanupRequested, "c1", events.DeploymentCleanupRequested{ExecutionID: id, CaseRef: "wf-1/guide-1"}); err != nil {
		t.Fatal(err)
	}
	var failed events.DeploymentFailed
	_ = json.Unmarshal(h.events.wait(t, events.TypeDeploymentFailed, 30*time.Second).Data, &failed)
	if failed.Operation != "cleanup" || !strings.Contains(failed.Error, "used by") {
		t.Fatalf("failed = %+v", failed)
	}
	if d := record(t, h, id); d.Status != deployer.StatusCleanupFailed || len(d.Processes) != 3 || !pidAlive(d.Processes[0].PID) {
		t.Fatalf("after a failed cleanup: %+v", d)
	}
	_ = h.repo.ReleaseUse(context.Background(), id, "run-1")
	if err := deliver(t, f, events.TypeDeploymentCleanupRequested, "c2", events.DeploymentCleanupRequested{ExecutionID: id, CaseRef: "wf-1/guide-1"}); err != nil {
		t.Fatal(err)
	}
	h.events.wait(t, events.TypeDeploymentCleaned, 30*time.Second)
	for _, p := range d.Processes {
		if pidAlive(p.PID) {
			t.Errorf("process %+v survived the cleanup", p)
		}
	}
	if _, err := os.Stat(filepath.Join(h.targets, id+".json")); !os.IsNotExist(err) {
		t.Errorf("the discovery file survived the cleanup: %v", err)
	}
	if _, err := h.repo.Execution(context.Background(), id); problem.CodeOf(err) != problem.CodeNotFound {
		t.Fatalf("execution after cleanup: %v", err)
	}
	if _, err := h.deps.Store.Get(context.Background(), deployer.Kind, id); err != state.ErrNotFound && !strings.Contains(err.Error(), "not found") {
		t.Fatalf("record after cleanup: %v", err)
	}
}

// freezer is the store of a worker that hangs (a stopped process, a partition) on the save of
// the record naming its freezeAt-th child: that save is never written, the lease is no longer
// renewed (it is left to expire), and both stay blocked until thaw is closed.
type freezer struct {
	state.Store
	freezeAt int
	once     sync.Once
	frozen   chan struct{} // closed when the worker froze
	thaw     chan struct{}
	started  []deployer.Process // what the unwritten save named
}

func newFreezer(freezeAt int) *freezer {
	return &freezer{freezeAt: freezeAt, frozen: make(chan struct{}), thaw: make(chan struct{})}
}

func (f *freezer) isFrozen() bool {
	select {
	case <-f.frozen:
		return true
	default:
		return false
	}
}

func (f *freezer) Update(ctx context.Context, rec state.Record, opts state.UpdateOptions) (state.Record, error) {
	var d deployer.Deployment
	if rec.Kind == deployer.Kind && json.Unmarshal(rec.Doc, &d) == nil && len(d.Processes) >= f.freezeAt {
		f.once.Do(func() { f.started = d.Processes; close(f.frozen) })
	}
	if f.isFrozen() {
		<-f.thaw
	}
	return f.Store.Update(ctx, rec, opts)
}

func (f *freezer) RenewLease(ctx context.Context, l state.Lease, ttl time.Duration) (state.Lease, error) {
	if f.isFrozen() {
		<-f.thaw
	}
	return f.Store.RenewLease(ctx, l, ttl)
}

// freePort is a loopback port nobody listens on (the local provider's default).
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// A deployer that hangs mid-deployment, its lease left to expire, is taken over by another
// instance, which stops every child the hung worker started before it starts its own: the
// recorded ones and the one started but never saved (the record names nothing in the first
// row: a worker that died between the router's start and the first save). The new owner's
// deployment is then ready, and its cleanup leaves nothing.
func TestATakeoverAfterTheLeaseExpiredStopsTheHungWorkersChildrenFirst(t *testing.T) {
	cases := []struct {
		name, provider, content string
		freezeAt                int // the child whose save never happens
		recorded                int // what the record names when the worker hangs
		want                    int // processes of the ready deployment
	}{
		{"nothing recorded", "baseline-vllm", `{"model":{"name":"sim-model"},"decode":{"replicas":1}}`, 1, 0, 1},
		{"router recorded, replica not", "optimized-baseline",
			`{"model":{"name":"sim-model"},"decode":{"replicas":1},"router":{"profile":"prefix-affinity"}}`, 2, 1, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			hung := newFreezer(tc.freezeAt)
			fa, _ := h.startWith(t, "deployer-a", instanceOptions{store: func(s state.Store) state.Store { hung.Store = s; return hung }})
			t.Cleanup(func() { close(hung.thaw) }) // before A stops (cleanups run last first)
			id := inventory.NewID()
			req := events.DeploymentRequested{ExecutionID: id, ConfigurationID: h.configuration(t, tc.provider, tc.content),
				ClusterSessionID: h.session, CaseRef: "wf-2/guide-1"}
			if err := deliver(t, fa, events.TypeDeploymentRequested, "e1", req); err != nil {
				t.Fatal(err)
			}
			select {
			case <-hung.frozen:
			case <-time.After(60 * time.Second):
				t.Fatal("deployer A started nothing")
			}
			if d := record(t, h, id); len(d.Processes) != tc.recorded || d.Attempts != 1 || d.Status != deployer.StatusDeploying {
				t.Fatalf("record when A hung: %+v, want %d process(es) recorded, attempt 1", d, tc.recorded)
			}
			for _, p := range hung.started {
				if !pidAlive(p.PID) {
					t.Fatalf("A's %s (pid %d) is not running", p.Role, p.PID)
				}
			}
			// B starts nothing before A's children are gone: its first port request is its
			// first step towards a child.
			var mu sync.Mutex
			var survivors []deployer.Process
			asked := false
			ports := func() (int, error) {
				mu.Lock()
				defer mu.Unlock()
				if !asked {
					asked = true
					for _, p := range hung.started {
						if pidAlive(p.PID) {
							survivors = append(survivors, p)
						}
					}
				}
				return freePort()
			}
			fb, _ := h.startWith(t, "deployer-b", instanceOptions{local: func(l *deployer.Local) { l.Ports = ports }})
			h.events.wait(t, events.TypeDeploymentReady, 90*time.Second)
			mu.Lock()
			if len(survivors) > 0 {
				t.Errorf("B started its children while A's still ran: %+v", survivors)
			}
			mu.Unlock()
			after := record(t, h, id)
			if after.Status != deployer.StatusReady || len(after.Processes) != tc.want || after.Attempts != 2 {
				t.Fatalf("after takeover: %+v", after)
			}
			for _, p := range after.Processes {
				if !pidAlive(p.PID) || !strings.Contains(p.Log, ".attempt-2") {
					t.Fatalf("B's process %+v: not running, or its log not its attempt's", p)
				}
			}
			if err := deliver(t, fb, events.TypeDeploymentCleanupRequested, "c1", events.DeploymentCleanupRequested{ExecutionID: id}); err != nil {
				t.Fatal(err)
			}
			h.events.wait(t, events.TypeDeploymentCleaned, 30*time.Second)
			for _, p := range append(after.Processes, hung.started...) {
				if pidAlive(p.PID) {
					t.Errorf("process %+v survived the cleanup", p)
				}
			}
		})
	}
}

// leaseLost is the store of a worker that can no longer renew its lease (the store answers
// unavailable), so it does not learn that the lease expired and was taken over.
type leaseLost struct {
	state.Store
	released chan struct{} // closed when the worker gives the lease up, its work done
	once     sync.Once
}

func (l *leaseLost) RenewLease(context.Context, state.Lease, time.Duration) (state.Lease, error) {
	return state.Lease{}, fmt.Errorf("%w: partitioned", state.ErrUnavailable)
}

func (l *leaseLost) ReleaseLease(ctx context.Context, lease state.Lease) error {
	defer l.once.Do(func() { close(l.released) })
	return l.Store.ReleaseLease(ctx, lease)
}

// A worker whose lease expired and was taken over, and whose deployment then fails, does not
// run the provider's cleanup: it would stop the new owner's children on the same host (they
// carry the same deployment id).
func TestAWorkerThatLostItsLeaseLeavesTheNewOwnersChildrenAlone(t *testing.T) {
	h := newHarness(t)
	stale := &leaseLost{released: make(chan struct{})}
	inPorts, failPorts := make(chan struct{}), make(chan struct{})
	var once sync.Once
	fa, _ := h.startWith(t, "deployer-a", instanceOptions{
		store: func(s state.Store) state.Store { stale.Store = s; return stale },
		local: func(l *deployer.Local) {
			l.Ports = func() (int, error) {
				once.Do(func() { close(inPorts) })
				<-failPorts
				return 0, errors.New("no port for the stale worker")
			}
		}})
	t.Cleanup(func() {
		select {
		case <-failPorts:
		default:
			close(failPorts)
		}
	})
	id := inventory.NewID()
	// Whatever is left of the deployment's children when the test ends is stopped.
	t.Cleanup(func() {
		_ = (&deployer.Local{StopGrace: time.Second}).Cleanup(context.Background(), &deployer.Deployment{ExecutionID: id})
	})
	req := events.DeploymentRequested{ExecutionID: id, ConfigurationID: h.configuration(t, "baseline-vllm", `{"model":{"name":"m"},"decode":{"replicas":1}}`),
		ClusterSessionID: h.session, CaseRef: "wf-4/guide-1"}
	if err := deliver(t, fa, events.TypeDeploymentRequested, "e1", req); err != nil {
		t.Fatal(err)
	}
	select {
	case <-inPorts:
	case <-time.After(30 * time.Second):
		t.Fatal("deployer A never got to its deployment")
	}
	// B takes the expired lease and starts its child: a stand-in simulator that never gets
	// ready, so it stays up for as long as the test needs.
	h.startWith(t, "deployer-b", instanceOptions{local: func(l *deployer.Local) {
		l.BinDir, l.ReadyTimeout = fakeSimulator(t, "exec sleep 60"), time.Minute
	}})
	var owned deployer.Deployment
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if owned = record(t, h, id); owned.Attempts == 2 && len(owned.Processes) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B did not take over: %+v", owned)
		}
	}
	close(failPorts) // A's deployment fails now, with B's child running
	select {
	case <-stale.released:
	case <-time.After(30 * time.Second):
		t.Fatal("deployer A never finished")
	}
	if p := owned.Processes[0]; !pidAlive(p.PID) {
		t.Fatalf("the stale worker stopped the new owner's child %+v", p)
	}
	if d := record(t, h, id); d.Status != deployer.StatusDeploying || d.Error != "" {
		t.Fatalf("the stale worker wrote the record: %+v", d)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// A port handed out free and taken by another process before the child binds it must not fail
// the deployment: the provider stops what it started and deploys again on new ports.
func TestLocalRetriesOnNewPortsWhenAChildLostItsPort(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	heldPort := held.Addr().(*net.TCPAddr).Port
	var handedOut []int
	ports := func() (int, error) {
		if len(handedOut) == 0 { // the first port of the first attempt is the one another process holds
			handedOut = append(handedOut, heldPort)
			return heldPort, nil
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		defer ln.Close()
		p := ln.Addr().(*net.TCPAddr).Port
		handedOut = append(handedOut, p)
		return p, nil
	}
	local := &deployer.Local{BinDir: binaries(t), LogDir: t.TempDir(), ReadyTimeout: 20 * time.Second,
		StopGrace: 3 * time.Second, Ports: ports}
	cfg, err := deployconfig.Parse("baseline-vllm", []byte(`{"model":{"name":"m"},"decode":{"replicas":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	d := &deployer.Deployment{ExecutionID: "exec-port-race"}
	saves := 0
	err = local.Deploy(context.Background(), d, cfg, func(context.Context) error { saves++; return nil })
	t.Cleanup(func() { _ = local.Cleanup(context.Background(), d) })
	if err != nil {
		t.Fatalf("deploy with one taken port: %v", err)
	}
	if len(d.Processes) != 1 || d.Processes[0].Port == heldPort {
		t.Fatalf("processes %+v: want one replica on a port other than the taken %d", d.Processes, heldPort)
	}
	if want := "http://127.0.0.1:" + strconv.Itoa(d.Processes[0].Port) + "/v1"; d.Endpoint != want {
		t.Fatalf("endpoint %q, want %q", d.Endpoint, want)
	}
	resp, err := http.Get(d.Endpoint + "/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/models: %d", d.Endpoint, resp.StatusCode)
	}
}

// A child the record never named (its deployer died between starting it and saving) is still
// stopped by the deployment's cleanup: it carries the deployment's id in its environment.
func TestCleanupStopsAChildTheRecordNeverNamed(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	cmd.Env = []string{"LENS_DEPLOYMENT=exec-unrecorded"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	other := exec.Command("sleep", "60")
	other.Env = []string{"LENS_DEPLOYMENT=exec-unrecorded-2"} // another deployment's child stays
	other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	local := &deployer.Local{LogDir: t.TempDir(), StopGrace: 2 * time.Second}
	d := &deployer.Deployment{ExecutionID: "exec-unrecorded"}
	if err := local.Cleanup(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the unrecorded child still runs after cleanup")
	}
	// pidAlive, not Signal(0): a child the cleanup killed stays a zombie of this test until
	// reaped, and a zombie still takes signals.
	if !pidAlive(other.Process.Pid) {
		t.Fatal("another deployment's child was stopped")
	}
	if len(d.Processes) != 0 {
		t.Fatalf("record after cleanup: %+v", d.Processes)
	}
}

// The local stack's deployer build (deployer.Builder(deployer.LocalProvider), what
// cmd/deployer-local runs) has no knative provider: a deployment on a kubernetes cluster session
// fails with deployment.failed saying which provider it needs and which build has it, and starts
// nothing.
func TestLocalBuildRefusesAKubernetesClusterClearly(t *testing.T) {
	h := newHarness(t)
	d := h.deps
	d.Config.InstanceID = "deployer-local"
	f, err := deployer.Builder(deployer.LocalProvider)(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	time.Sleep(50 * time.Millisecond) // Start records its context before the first event

	_, session, err := h.repo.CreateCluster(context.Background(), inventory.ClusterSpec{Name: "k8s", Kind: inventory.ClusterKubernetes,
		Namespace: "eval", Kubeconfig: kubeconfigtest.Token("https://127.0.0.1:6443", "test-token")})
	if err != nil {
		t.Fatal(err)
	}
	id := inventory.NewID()
	req := events.DeploymentRequested{ExecutionID: id, ConfigurationID: h.configuration(t, "optimized-baseline", optimized2),
		ClusterSessionID: session.ID, CaseRef: "wf-1/guide-1"}
	if err := deliver(t, f, events.TypeDeploymentRequested, "e1", req); err != nil {
		t.Fatal(err)
	}
	var failed events.DeploymentFailed
	_ = json.Unmarshal(h.events.wait(t, events.TypeDeploymentFailed, 30*time.Second).Data, &failed)
	for _, want := range []string{`"kubernetes" cluster needs the knative provider`, "it has: local", "functions/deployer/cmd/deployer)"} {
		if failed.Operation != "deploy" || !strings.Contains(failed.Error, want) {
			t.Fatalf("failed = %+v, want an error containing %q", failed, want)
		}
	}
	if rec := record(t, h, id); rec.Status != deployer.StatusFailed || len(rec.Processes) != 0 || len(rec.Objects) != 0 {
		t.Fatalf("record = %+v", rec)
	}
}

// fakeSimulator is a BinDir whose inference-sim is the shell script body (for tests that need
// a child process, not a simulator).
func fakeSimulator(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, deployer.SimulatorBinary), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A child that dies before it is ready fails the deployment with the end of its log, which is
// the deployer's alone (0600 in a 0700 directory) and loses the credentials it held: the
// router logs requests, the simulator echoes its flags.
func TestAChildsLogIsPrivateAndItsExcerptHoldsNoCredentials(t *testing.T) {
	cases := []struct {
		name, line, secret string
	}{
		{"authorization header", `GET /v1/models Authorization: Basic dXNlcjpodW50ZXIy`, "dXNlcjpodW50ZXIy"},
		{"bearer token in a body", `{"error":"rejected","auth":"Bearer sk-live-4242abcd"}`, "sk-live-4242abcd"},
		{"api key flag", `invalid value for flag --api-key=sk-flag-9999: too long`, "sk-flag-9999"},
		{"api key flag, separate value", `usage: inference-sim --api-key sk-flag-8888 --port 1`, "sk-flag-8888"},
		{"api_key query parameter", `GET /v1/models?api_key=qk-7777zz&x=1 401`, "qk-7777zz"},
		{"x-api-key header", `x-api-key: hk-6666yy`, "hk-6666yy"},
		{"json api key", `config {"apiKey": "jk-5555ww", "port": 8000}`, "jk-5555ww"},
		{"admin token", `admin-token=at-4444vv`, "at-4444vv"},
		{"lensfn token", `client token lens_ab12cd34_` + strings.Repeat("0f", 32) + ` refused`, "lens_ab12cd34_" + strings.Repeat("0f", 32)},
	}
	cfg, err := deployconfig.Parse("baseline-vllm", []byte(`{"model":{"name":"m"},"decode":{"replicas":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A line long enough to push most of it out of the excerpt, the secret at its end.
			script := "echo 'starting " + strings.Repeat("x", 600) + "'\necho '" + tc.line + "'\necho 'shutting down'\nexit 1"
			local := &deployer.Local{BinDir: fakeSimulator(t, script), LogDir: t.TempDir(), ReadyTimeout: 10 * time.Second, StopGrace: time.Second}
			d := &deployer.Deployment{ExecutionID: "exec-log-" + strconv.Itoa(len(tc.name))}
			err := local.Deploy(context.Background(), d, cfg, func(context.Context) error { return nil })
			t.Cleanup(func() { _ = local.Cleanup(context.Background(), d) })
			if err == nil || !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "shutting down") {
				t.Fatalf("deploy of a child that exits: %v", err)
			}
			if strings.Contains(err.Error(), tc.secret) {
				t.Fatalf("the error carries the secret %q: %v", tc.secret, err)
			}
			if !strings.Contains(err.Error(), "[REDACTED]") {
				t.Fatalf("the error does not say a value was redacted: %v", err)
			}
			log := d.Processes[0].Log
			for path, want := range map[string]os.FileMode{log: 0o600, filepath.Dir(log): 0o700 | os.ModeDir} {
				st, err := os.Stat(path)
				if err != nil || st.Mode() != want {
					t.Fatalf("%s: mode %v (%v), want %v", path, st.Mode(), err, want)
				}
			}
		})
	}
}

// What is not a credential stays readable in the excerpt: counts of tokens, prose about keys.
func TestALogExcerptKeepsWhatIsNoCredential(t *testing.T) {
	lines := "echo 'max_tokens: 16 --max-num-batched-tokens 256 tokens=4'\necho 'the API key is missing'"
	local := &deployer.Local{BinDir: fakeSimulator(t, lines+"\nexit 1"), LogDir: t.TempDir(), ReadyTimeout: 10 * time.Second}
	cfg, err := deployconfig.Parse("baseline-vllm", []byte(`{"model":{"name":"m"},"decode":{"replicas":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	d := &deployer.Deployment{ExecutionID: "exec-log-plain"}
	err = local.Deploy(context.Background(), d, cfg, func(context.Context) error { return nil })
	for _, want := range []string{"max_tokens: 16", "--max-num-batched-tokens 256", "the API key is missing", "tokens=4"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v, want it to keep %q", err, want)
		}
	}
}

// releaseGate holds a worker's first ReleaseLease until proceed is closed, so a test can send
// an event in the window between a worker's last look at the record and its exit.
type releaseGate struct {
	state.Store
	once    sync.Once
	entered chan struct{}
	proceed chan struct{}
}

func (g *releaseGate) ReleaseLease(ctx context.Context, l state.Lease) error {
	g.once.Do(func() { close(g.entered); <-g.proceed })
	return g.Store.ReleaseLease(ctx, l)
}

// A cleanup requested while the worker is finishing (it has looked at the record for the last
// time and is releasing the lease) is acted on at once, not at the next sweep (an hour away
// here).
func TestACleanupRequestedWhileTheWorkerFinishesIsActedOnAtOnce(t *testing.T) {
	h := newHarness(t)
	gate := &releaseGate{entered: make(chan struct{}), proceed: make(chan struct{})}
	// No binaries: the deployment fails at once, and its worker releases the lease.
	f, _ := h.startWith(t, "deployer-a", instanceOptions{sweepInterval: time.Hour,
		store: func(s state.Store) state.Store { gate.Store = s; return gate },
		local: func(l *deployer.Local) { l.BinDir = t.TempDir() }})
	t.Cleanup(func() {
		select {
		case <-gate.proceed:
		default:
			close(gate.proceed)
		}
	})
	id := inventory.NewID()
	req := events.DeploymentRequested{ExecutionID: id, ConfigurationID: h.configuration(t, "baseline-vllm", `{"model":{"name":"m"},"decode":{"replicas":1}}`),
		ClusterSessionID: h.session, CaseRef: "wf-3/guide-1"}
	if err := deliver(t, f, events.TypeDeploymentRequested, "e1", req); err != nil {
		t.Fatal(err)
	}
	h.events.wait(t, events.TypeDeploymentFailed, 30*time.Second)
	select {
	case <-gate.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker never released its lease")
	}
	if err := deliver(t, f, events.TypeDeploymentCleanupRequested, "c1", events.DeploymentCleanupRequested{ExecutionID: id, CaseRef: "wf-3/guide-1"}); err != nil {
		t.Fatal(err)
	}
	close(gate.proceed)
	h.events.wait(t, events.TypeDeploymentCleaned, 5*time.Second)
	if _, err := h.deps.Store.Get(context.Background(), deployer.Kind, id); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("record after cleanup: %v", err)
	}
}
