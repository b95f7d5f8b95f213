package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lensfn/lensfn/runtime/secret"
	"github.com/lensfn/lensfn/runtime/state/redisstore"
)

// Options configure a Stack.
type Options struct {
	ManifestDir string // deploy/knative
	BinDir      string // where `make build` put the function binaries
	ModuleDir   string // built-in WASM modules (`make wasm`)
	DataDir     string // LENS_DATA_DIR for every function; Redis persistence and logs too
	Addr        string // the ingress address, e.g. 127.0.0.1:8080 (":0" picks a port)
	// Env is added to every function's environment (after the manifest's), e.g. LENS_DATASET_MIRROR.
	Env map[string]string
	// Only, when non-empty, starts just these services.
	Only []string
	// Auth is LENS_AUTH for every function: "required", or "off"; empty means off when the
	// ingress listens on loopback only and required otherwise.
	Auth string
	// SimulatorAddr is where the stack's inference simulator listens (loopback host:port, e.g.
	// 127.0.0.1:8000), so tasks that target it still reach it after a restart; empty picks a
	// free port (tests).
	SimulatorAddr string
	// StartPrometheus starts Debian's prometheus when it is on PATH (make run does), with
	// file-based discovery of the serving endpoints, and hands its URL to the benchmark runner.
	StartPrometheus bool
	// ReadyTimeout bounds the wait for every function's readiness probe; default 90s.
	ReadyTimeout time.Duration
	Log          func(format string, args ...any)
	// Debug, when set, takes what only helps debugging (an event no Trigger subscribes to).
	Debug func(format string, args ...any)
}

// Stack is a running local stack.
type Stack struct {
	opts      Options
	manifests *Manifests
	RedisURL  string
	BrokerURL string
	APIURL    string
	// LocalSessionID is the active session of the `local` cluster registered in inventory-api
	// ("" when the stack runs without it).
	LocalSessionID string
	procs          map[string]*process
	broker         *Broker
	servers        []*http.Server
	stopRedis      func()
	redis          *process // redis-server when it is on PATH
	// PrometheusURL is the stack's Prometheus ("" when none runs).
	PrometheusURL     string
	prometheus        *process
	prometheusTargets string   // its file-SD directory
	dataLock          *os.File // the flock that keeps a second stack off the data dir
	secretKey         string
	simAdminToken     string // the simulator's /admin token (LENS_SIM_ADMIN_TOKEN), as the Knative Secret holds it
	eventToken        string // the event credential (LENS_EVENT_TOKEN) when LENS_AUTH=required
	mu                sync.Mutex
}

// Start brings everything up and returns once every function answers its readiness probe.
func Start(ctx context.Context, opts Options) (*Stack, error) {
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 90 * time.Second
	}
	if opts.Log == nil {
		opts.Log = func(string, ...any) {}
	}
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:8080"
	}
	if opts.Auth == "" {
		opts.Auth = "required"
		if loopbackAddr(opts.Addr) {
			opts.Auth = "off"
		}
	}
	if opts.Auth == "off" {
		opts.Log("WARNING: AUTHENTICATION IS OFF (LENS_AUTH=off): anyone who can reach %s can create, stop and delete tasks. "+
			"The stack listens on loopback only and refuses other Host and Origin headers; set LENS_AUTH=required to need tokens "+
			"(bin/lensfn-local token create --data-dir DIR --scopes ...)", opts.Addr)
	}
	m, err := LoadManifests(opts.ManifestDir)
	if err != nil {
		return nil, err
	}
	// Everything under the data dir is private (keys, passwords, traces, artifacts), redis-server's
	// files included: it inherits this umask.
	syscall.Umask(0o077)
	if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chmod(opts.DataDir, 0o700); err != nil {
		return nil, err
	}
	s := &Stack{opts: opts, manifests: m, procs: map[string]*process{}}
	if s.dataLock, err = lockDataDir(opts.DataDir); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			s.Stop()
		}
	}()
	if s.secretKey, err = loadOrCreate(filepath.Join(opts.DataDir, "secret.key"), secret.NewKey); err != nil {
		return nil, err
	}
	if s.simAdminToken, err = loadOrCreate(filepath.Join(opts.DataDir, SimAdminTokenFile), newPassword); err != nil {
		return nil, err
	}
	if opts.Auth == "required" {
		if s.eventToken, err = loadOrCreate(filepath.Join(opts.DataDir, EventTokenFile), newPassword); err != nil {
			return nil, err
		}
	}
	if err := s.startRedis(ctx); err != nil {
		return nil, err
	}
	if err := writeStackFile(opts.DataDir, StackFile{RedisURL: s.RedisURL, StorePrefix: opts.Env["LENS_STORE_PREFIX"], PID: os.Getpid()}); err != nil {
		return nil, err
	}
	if err := s.startBroker(); err != nil {
		return nil, err
	}
	if err := s.startPrometheus(ctx); err != nil {
		return nil, err
	}
	// The ingress listens before the functions start: the console is told its address
	// (LENS_API_URL) to call the APIs through it.
	ingress, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("ingress on %s: %w", opts.Addr, err)
	}
	s.APIURL = "http://" + ingress.Addr().String()
	for _, svc := range simulatorFirst(m.Services) {
		if len(opts.Only) > 0 && !contains(opts.Only, svc.Name) {
			continue
		}
		if err := s.startFunction(svc); err != nil {
			ingress.Close()
			return nil, err
		}
	}
	s.startIngress(ingress)
	deadline := time.Now().Add(opts.ReadyTimeout)
	for _, name := range s.Functions() {
		if err := s.procs[name].waitReady(ctx, deadline); err != nil {
			return nil, err
		}
	}
	if s.LocalSessionID, err = s.registerLocalCluster(ctx); err != nil {
		return nil, err
	}
	ok = true
	return s, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Functions lists the running functions by name.
func (s *Stack) Functions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.procs))
	for n := range s.procs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// FunctionURL is a function's own address (for tests and the broker).
func (s *Stack) FunctionURL(name string) (string, bool) {
	s.mu.Lock()
	p, ok := s.procs[name]
	s.mu.Unlock()
	if !ok {
		return "", false
	}
	return p.url(), true
}

// PID is a function's current process id (0 while it restarts).
func (s *Stack) PID(name string) int {
	s.mu.Lock()
	p, ok := s.procs[name]
	s.mu.Unlock()
	if !ok {
		return 0
	}
	return p.pid()
}

// Auth is the LENS_AUTH the functions run with.
func (s *Stack) Auth() string { return s.opts.Auth }

// RedisAddr is Redis's address without its password, for showing.
func (s *Stack) RedisAddr() string {
	if u, err := url.Parse(s.RedisURL); err == nil {
		return u.Host
	}
	return ""
}

// DataDir is LENS_DATA_DIR of every function.
func (s *Stack) DataDir() string { return s.opts.DataDir }

// SimAdminTokenFile is the file under the data dir (0600) holding the simulator's /admin token.
const SimAdminTokenFile = "sim-admin.token"

// SimAdminToken is the bearer token the stack's simulator wants on /admin/*.
func (s *Stack) SimAdminToken() string { return s.simAdminToken }

// EventTokenFile is the file under the data dir (0600) holding the event credential.
const EventTokenFile = "events.token"

// EventToken is the credential events into the Broker need ("" with LENS_AUTH=off).
func (s *Stack) EventToken() string { return s.eventToken }

// WaitForDeliveries blocks until the broker has delivered or dead-lettered every event so far.
func (s *Stack) WaitForDeliveries() { s.broker.Wait() }

func (s *Stack) startRedis(ctx context.Context) error {
	// Both stores get the data dir's password: a loopback port is open to every local user.
	password, err := loadOrCreate(filepath.Join(s.opts.DataDir, "redis.password"), newPassword)
	if err != nil {
		return err
	}
	path, err := exec.LookPath("redis-server")
	if err != nil {
		embedded, err := redisstore.StartEmbeddedWithPassword(password)
		if err != nil {
			return err
		}
		s.opts.Log("WARNING: redis-server is not on PATH: using the embedded Redis-compatible server at %s (password in %s); its data lives only as long as this stack",
			embedded.Addr(), filepath.Join(s.opts.DataDir, "redis.password"))
		s.RedisURL, s.stopRedis = embedded.URL(), func() { embedded.Close() }
		return nil
	}
	dir := filepath.Join(s.opts.DataDir, "redis")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	// The password goes in a private config file, not on the command line, where every user
	// of the machine could read it.
	conf := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(conf, []byte("requirepass "+password+"\n"), 0o600); err != nil {
		return err
	}
	cmd := exec.Command(path, conf, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir,
		"--appendonly", "yes", "--save", "", "--protected-mode", "yes", "--logfile", filepath.Join(dir, "redis.log"))
	// Supervised like the functions: restarted with backoff when it dies, SIGTERM when the stack dies.
	s.redis = &process{name: "redis-server", bin: cmd.Path, args: cmd.Args[1:], log: s.opts.Log,
		logPath: filepath.Join(s.opts.DataDir, "logs", "redis-server.log")}
	if err := os.MkdirAll(filepath.Dir(s.redis.logPath), 0o700); err != nil {
		return err
	}
	s.redis.supervise()
	s.stopRedis = func() { s.redis.stop(10 * time.Second) }
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("redis-server did not listen on %s (see %s)", addr, filepath.Join(dir, "redis.log"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.RedisURL = "redis://:" + password + "@" + addr + "/0"
	s.opts.Log("redis-server %s, append-only persistence in %s", addr, dir)
	return nil
}

func (s *Stack) startBroker() error {
	delivery := Delivery{Retry: 3, Backoff: 200 * time.Millisecond, Timeout: 60 * time.Second}
	if len(s.manifests.Brokers) > 0 {
		d, err := deliveryOf(s.manifests.Brokers[0])
		if err != nil {
			return fmt.Errorf("broker %s: %w", s.manifests.Brokers[0].Metadata.Name, err)
		}
		delivery = d
	}
	s.broker = &Broker{Triggers: s.manifests.Triggers, Delivery: delivery,
		DeadLetter: filepath.Join(s.opts.DataDir, "dead-letters.jsonl"), Log: s.opts.Log, Debug: s.opts.Debug, Resolve: s.FunctionURL,
		Hosts: strings.Split(loopbackHosts, ","), Token: s.eventToken}
	url, err := s.serve("127.0.0.1:0", s.broker)
	if err != nil {
		return err
	}
	s.BrokerURL = url
	return nil
}

// startIngress routes each lensfn.dev/path-prefix to its function, like a cluster ingress would,
// and answers /healthz itself. A function whose prefix is "/" (the console) gets every path no
// other prefix claims, except under /api/, where an unknown path stays the ingress's
// problem+json 404 naming the API prefixes.
func (s *Stack) startIngress(l net.Listener) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		functions := map[string]string{}
		for _, name := range s.Functions() {
			functions[name] = "restarting"
			if s.procs[name].running() {
				functions[name] = "running"
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "ok", "functions": functions})
	})
	var prefixes []string
	var root http.Handler
	for _, svc := range s.manifests.Services {
		if svc.PathPrefix == "" || s.procs[svc.Name] == nil {
			continue
		}
		proxy := s.proxyTo(s.procs[svc.Name])
		if svc.ServesRoot() {
			root = proxy
		}
		for _, prefix := range svc.PathPrefixes() {
			prefixes = append(prefixes, prefix)
			mux.Handle(prefix+"/", proxy)
			mux.Handle(prefix, proxy)
		}
	}
	notFound := func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, http.StatusNotFound, "not_found", "Not found",
			fmt.Sprintf("no route %s %s; the APIs are under %s", r.Method, r.URL.Path, strings.Join(prefixes, ", ")))
	}
	mux.HandleFunc("/api/", notFound)
	mux.HandleFunc("/api", notFound) // else ServeMux would redirect it to /api/
	if root != nil {
		mux.Handle("/", root)
	} else {
		mux.HandleFunc("/", notFound)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	s.servers = append(s.servers, srv)
	go func() { _ = srv.Serve(l) }()
}

// proxyTo forwards to a function's process as a cluster ingress would.
func (s *Stack) proxyTo(p *process) http.Handler {
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			target, _ := url.Parse(p.url())
			r.SetURL(target)
			r.SetXForwarded()
			// The function checks the Host the client used, as behind a cluster ingress.
			r.Out.Host = r.In.Host
		},
		FlushInterval: -1, // stream downloads and progress as they come
		// The function's own answers (a 413 included) pass through untouched.
		ErrorHandler: upstreamError(p),
	}
}

// upstreamError answers a request the function gave no answer to: 503 while its process
// restarts, else 502 with the cause (never a false "restarting").
func upstreamError(p *process) func(http.ResponseWriter, *http.Request, error) {
	return func(w http.ResponseWriter, _ *http.Request, err error) {
		if !p.running() {
			writeProblem(w, http.StatusServiceUnavailable, "service_unavailable", "Service unavailable",
				p.name+" is restarting; try again shortly")
			return
		}
		writeProblem(w, http.StatusBadGateway, "upstream_unavailable", "Bad gateway",
			fmt.Sprintf("%s did not answer: %v", p.name, err))
	}
}

// writeProblem answers the ingress's own errors in the functions' problem+json shape.
func writeProblem(w http.ResponseWriter, status int, code, title, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "https://lensfn.dev/problems/" + code, "title": title,
		"status": status, "detail": detail, "code": code})
}

func (s *Stack) serve(addr string, h http.Handler) (string, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	s.servers = append(s.servers, srv)
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String(), nil
}

func (s *Stack) startFunction(svc Service) error {
	bin := filepath.Join(s.opts.BinDir, svc.Binary)
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("function %s: binary %s is missing (run make build)", svc.Name, bin)
	}
	port, movable, err := s.portFor(svc)
	if err != nil {
		return err
	}
	env := map[string]string{}
	for k, v := range svc.Env {
		env[k] = rewriteClusterURLs(v, s.FunctionURL)
	}
	// The cluster values of the manifest are replaced by their loopback equivalents.
	for k, v := range map[string]string{
		"PORT": strconv.Itoa(port), "K_SERVICE": svc.Name, "K_REVISION": svc.Name + "-local",
		"K_CONFIGURATION": svc.Name, "K_SINK": s.BrokerURL, "REDIS_URL": s.RedisURL,
		"LENS_DATA_DIR": s.opts.DataDir, "LENS_BUILTIN_MODULE_DIR": s.opts.ModuleDir,
		"LENS_CACHE_DIR": s.cacheDir(), "LENS_DRAIN_QUIET_PERIOD": "500ms",
		"POD_NAME": svc.Name + "-local", "K_LOGGING_CONFIG": "",
		// Every function binds loopback and answers loopback names only (DNS rebinding).
		"LENS_LISTEN_HOST": "127.0.0.1", "LENS_ALLOWED_HOSTS": loopbackHosts, "LENS_AUTH": s.opts.Auth,
	} {
		env[k] = v
	}
	// The console calls the APIs through this ingress, over plain HTTP on loopback (so its
	// cookie cannot be Secure).
	if _, ok := svc.Env["LENS_API_URL"]; ok {
		env["LENS_API_URL"], env["LENS_COOKIE_SECURE"] = s.APIURL, "false"
	}
	for k, v := range s.prometheusEnv(svc.Name) {
		env[k] = v
	}
	if err := s.listForPrometheus(svc.Name, port); err != nil {
		return err
	}
	// Only the functions whose manifest takes the Secret seal or open endpoint keys.
	if contains(svc.ClusterEnv, "LENS_SECRET_KEY") {
		env["LENS_SECRET_KEY"] = s.secretKey
	}
	// The simulator's /admin needs a token, as the manifest's Secret gives it under Knative:
	// without one any local process could change its latencies and failure injection.
	if contains(svc.ClusterEnv, "LENS_SIM_ADMIN_TOKEN") {
		env["LENS_SIM_ADMIN_TOKEN"] = s.simAdminToken
	}
	// With LENS_AUTH=required events need the stack's credential, at the Broker and at /events.
	if s.eventToken != "" {
		env["LENS_EVENT_TOKEN"] = s.eventToken
	}
	for k, v := range s.opts.Env {
		env[k] = v
	}
	p := &process{name: svc.Name, bin: bin, args: localArgs(svc), env: env, port: port, readiness: svc.ReadinessPath,
		logPath: filepath.Join(s.opts.DataDir, "logs", svc.Name+".log"), log: s.opts.Log, movable: movable,
		onMove: func(port int) {
			if err := s.listForPrometheus(svc.Name, port); err != nil {
				s.opts.Log("%s: Prometheus target not updated: %v", svc.Name, err)
			}
		}}
	if err := os.MkdirAll(filepath.Dir(p.logPath), 0o700); err != nil {
		return err
	}
	s.mu.Lock()
	s.procs[svc.Name] = p
	s.mu.Unlock()
	p.supervise()
	return nil
}

// loopbackFlags are the command-line flags that keep a function whose
// listen address is a flag (not the environment) on loopback: the stack
// serves 127.0.0.1 only.
var loopbackFlags = map[string][]string{"inference-sim": {"--host", "127.0.0.1"}}

// localArgs is the manifest's command line plus the function's loopback flags.
func localArgs(svc Service) []string {
	return append(slices.Clone(svc.Args), loopbackFlags[svc.Binary]...)
}

// The functions compile their WASM modules in the background (a cold cache: tens of seconds)
// and serve meanwhile, so the stack starts them without waiting; their /readyz lists what
// they are still preparing (fn.WarmingPrefix lines), which Warming and WaitWarm read.

// Warming is what the functions are still preparing (e.g. "compiling WASM module
// mooncake_trace"), each item once, sorted; empty when every function is warm.
func (s *Stack) Warming(ctx context.Context) []string {
	seen := map[string]bool{}
	for _, name := range s.Functions() {
		s.mu.Lock()
		p := s.procs[name]
		s.mu.Unlock()
		for _, item := range p.warming(ctx) {
			seen[item] = true
		}
	}
	out := make([]string, 0, len(seen))
	for item := range seen {
		out = append(out, item)
	}
	sort.Strings(out)
	return out
}

// WaitWarm waits until no function has start-up work left, calling done (optional) with each
// item as it finishes; it returns ctx's error if ctx ends first.
func (s *Stack) WaitWarm(ctx context.Context, done func(item string)) error {
	pending := s.Warming(ctx)
	for len(pending) > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond): // polling the functions' readiness
		}
		now := s.Warming(ctx)
		for _, item := range pending {
			if done != nil && !slices.Contains(now, item) {
				done(item)
			}
		}
		pending = now
	}
	return nil
}

// cacheDir is LENS_CACHE_DIR of every function.
func (s *Stack) cacheDir() string {
	if dir := s.opts.Env["LENS_CACHE_DIR"]; dir != "" {
		return dir
	}
	return filepath.Join(s.opts.DataDir, "cache")
}

// simulatorFirst orders services with the simulator first, so a function whose manifest names
// it by its cluster address (the inference-router's ROUTER_REPLICAS) starts knowing its loopback
// URL.
func simulatorFirst(services []Service) []Service {
	out := make([]Service, 0, len(services))
	for _, svc := range services {
		if svc.Name == SimulatorService {
			out = append(out, svc)
		}
	}
	for _, svc := range services {
		if svc.Name != SimulatorService {
			out = append(out, svc)
		}
	}
	return out
}

// clusterURL is a Knative Service's in-cluster address as the manifests write it:
// http://NAME.NAMESPACE.svc.cluster.local.
var clusterURL = regexp.MustCompile(`http://([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.[a-z0-9-]+\.svc\.cluster\.local`)

// rewriteClusterURLs replaces, in a manifest's env value, each in-cluster address of a
// function the stack already runs with that function's loopback URL (functionURL); an address
// of anything else stays as it is.
func rewriteClusterURLs(value string, functionURL func(name string) (string, bool)) string {
	if !strings.Contains(value, ".svc.cluster.local") {
		return value
	}
	return clusterURL.ReplaceAllStringFunc(value, func(addr string) string {
		name := clusterURL.FindStringSubmatch(addr)[1]
		if u, ok := functionURL(name); ok {
			return u
		}
		return addr
	})
}

// SimulatorService is the Knative Service of the inference simulator the stack starts as the
// default target endpoint.
const SimulatorService = "inference-sim"

// portFor is a function's port: SimulatorAddr's for the simulator, a free one for the others;
// movable says it was any free one (so a restart may take another).
func (s *Stack) portFor(svc Service) (port int, movable bool, err error) {
	if svc.Name != SimulatorService || s.opts.SimulatorAddr == "" {
		port, err = freePort()
		return port, true, err
	}
	port, err = s.simulatorPort()
	return port, err == nil && s.simulatorPortIsAny(), err
}

// simulatorPortIsAny says whether SimulatorAddr asks for any free port (host:0).
func (s *Stack) simulatorPortIsAny() bool {
	_, portText, err := net.SplitHostPort(s.opts.SimulatorAddr)
	return err == nil && portText == "0"
}

// simulatorPort is the simulator's port from SimulatorAddr, checked free.
func (s *Stack) simulatorPort() (int, error) {
	host, portText, err := net.SplitHostPort(s.opts.SimulatorAddr)
	port, perr := strconv.Atoi(portText)
	if err == nil && perr == nil && port == 0 && loopbackAddr(s.opts.SimulatorAddr) {
		return freePort() // host:0, as for the ingress: any free port
	}
	if err != nil || perr != nil || port < 1 || port > 65535 || !loopbackAddr(s.opts.SimulatorAddr) {
		return 0, fmt.Errorf("simulator address %q: want a loopback host:port such as 127.0.0.1:8000 (LENS_SIM_ADDR)", s.opts.SimulatorAddr)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, portText))
	if err != nil {
		return 0, fmt.Errorf("the simulator's address %s is taken (%v): stop what listens there or set LENS_SIM_ADDR to another address", s.opts.SimulatorAddr, err)
	}
	l.Close()
	return port, nil
}

// Simulator is the stack's inference simulator as a task targets it: its OpenAI base URL and
// the model it serves (the manifest's --model); ok is false when it is not running.
func (s *Stack) Simulator() (endpointURL, model string, ok bool) {
	u, ok := s.FunctionURL(SimulatorService)
	if !ok {
		return "", "", false
	}
	svc, _ := s.manifests.Service(SimulatorService)
	model = "fake-model" // the simulator's default
	for i, a := range svc.Args {
		if a == "--model" && i+1 < len(svc.Args) {
			model = svc.Args[i+1]
		} else if v, found := strings.CutPrefix(a, "--model="); found {
			model = v
		}
	}
	return u + "/v1", model, true
}

// Stop drains every function (SIGTERM, then waits), then the broker, Prometheus and Redis.
func (s *Stack) Stop() {
	var wg sync.WaitGroup
	s.mu.Lock()
	for _, p := range s.procs {
		wg.Add(1)
		go func(p *process) { defer wg.Done(); p.stop(20 * time.Second) }(p)
	}
	s.mu.Unlock()
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range s.servers {
		_ = srv.Shutdown(ctx)
	}
	s.stopPrometheus()
	if s.stopRedis != nil {
		s.stopRedis()
	}
	if f, err := ReadStackFile(s.opts.DataDir); err == nil && f.PID == os.Getpid() {
		_ = os.Remove(filepath.Join(s.opts.DataDir, stackFileName))
	}
	if s.dataLock != nil {
		_ = s.dataLock.Close() // releases the flock
	}
}

// RedisPID is the current redis-server's process id (0 with the embedded server or while it
// restarts).
func (s *Stack) RedisPID() int {
	if s.redis == nil {
		return 0
	}
	return s.redis.pid()
}

// loadOrCreate reads a private value of the stack (the sealing key, the Redis password),
// creating it (0600) on first start so what was sealed or stored before a restart stays usable.
func loadOrCreate(path string, create func() string) (string, error) {
	raw, err := os.ReadFile(path)
	if err == nil {
		value := strings.TrimSpace(string(raw))
		if value == "" {
			return "", fmt.Errorf("%s is empty", path)
		}
		return value, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	value := create()
	return value, os.WriteFile(path, []byte(value+"\n"), 0o600)
}

func newPassword() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// loopbackHosts are the names a loopback stack answers to.
const loopbackHosts = "127.0.0.1,localhost,::1"

// loopbackAddr says whether a listen address binds loopback only.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var errStopped = errors.New("stack stopped")
