package fn

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/caarlos0/env/v11"
	"go.uber.org/zap"
	"knative.dev/pkg/network/handlers"
	"knative.dev/pkg/signals"

	"github.com/lensfn/lensfn/runtime/auth"
	"github.com/lensfn/lensfn/runtime/cloudevent"
	"github.com/lensfn/lensfn/runtime/egress"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/state"
	"github.com/lensfn/lensfn/runtime/state/redisstore"
)

// Logger is the structured logger functions receive (zap's sugared logger, configured as
// Knative's config-logging says), named here so functions need not import zap.
type Logger = zap.SugaredLogger

// Deps is what the runtime hands a function's Builder.
type Deps struct {
	Config  Config
	Log     *Logger
	Metrics *Metrics
	Store   state.Store
	Events  *cloudevent.Sender
	// Egress is the operator's endpoint policy: every outbound call to a user-given endpoint
	// goes through its Check and Client (or Transport).
	Egress *egress.Policy
	// Tokens verifies bearer tokens (and lets admin tools create them).
	Tokens *auth.Tokens
}

// Function is what a Builder returns: its routes, the event types it consumes and its hooks.
type Function struct {
	// Routes is the function's HTTP API. The runtime builds the mux from it, adds /healthz,
	// /readyz, /metrics and /events, and checks each route's scope, body and browser headers.
	Routes []Route
	// Events maps each consumed CloudEvent type to its handler, served at POST /events.
	Events map[string]cloudevent.Handler
	// Ready, when set, adds a readiness condition (for example: modules compiled).
	Ready func(ctx context.Context) error
	// Warming, when set, names what the function is still preparing while it already serves
	// (for example "compiling WASM module mooncake_trace"): /readyz stays 200 - the
	// function's other routes work - and lists each on a "warming: " line, so the local
	// stack and an operator can tell when start-up work is done.
	Warming func() []string
	// Start, when set, runs the function's background loops (sweeps, janitors). Build only
	// wires; the runtime calls Start once the server listens, cancels ctx when the drain begins
	// and waits for Start to return before Close, so no loop outlives the store it uses.
	Start func(ctx context.Context)
	// Close releases the function's resources after the server stopped and Start returned.
	Close func(ctx context.Context) error
}

// Builder constructs a function from its dependencies.
type Builder func(ctx context.Context, d Deps) (*Function, error)

// Main is the whole body of a function's main: read the environment, run until SIGTERM, drain,
// exit non-zero on failure.
func Main(name string, build Builder) {
	// Files a function writes under the data dir (datasets, artifacts, spools) are private.
	syscall.Umask(0o077)
	cfg, err := LoadConfig(env.ToMap(os.Environ()))
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: configuration: %v\n", name, err)
		os.Exit(2)
	}
	if err := Run(signals.NewContext(), cfg, name, build); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

// Server is a built function with the runtime around it, ready to serve.
type Server struct {
	// Handler serves everything: probes, /metrics, /events and the function's routes.
	Handler http.Handler
	Deps    Deps
	drainer *handlers.Drainer
	closers []func(ctx context.Context) error
	start   func(ctx context.Context)
	// stopStart cancels Start's context; started is closed when Start returned.
	stopStart context.CancelFunc
	started   chan struct{}
}

// NewServer opens the store and the event sender, builds the function and assembles its handler.
// Tests serve Handler with httptest; Run serves it on PORT.
func NewServer(ctx context.Context, cfg Config, name string, build Builder) (_ *Server, err error) {
	name = cfg.Name(name)
	log := newLogger(cfg.LoggingConfig, cfg.LogLevel)
	log = log.With("function", name, "instance", cfg.InstanceID)
	metrics := newMetrics(name)
	s := &Server{}
	defer func() {
		if err != nil {
			_ = s.Close(context.WithoutCancel(ctx))
		}
	}()
	store, stopEmbedded, err := openStore(ctx, cfg, metrics, log)
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, func(context.Context) error { stopEmbedded(); return nil },
		func(context.Context) error { return store.Close() })
	sender, err := cloudevent.NewSender(cloudevent.SenderConfig{Sink: cfg.Sink, Source: "/lensfn/" + name,
		Extensions: cfg.CEOverrides, Observe: metrics.observeSent, Token: cfg.EventToken.Reveal()})
	if err != nil {
		return nil, err
	}
	s.Deps = Deps{Config: cfg, Log: log, Metrics: metrics, Store: store, Events: sender,
		Egress: egress.New(cfg.Endpoints), Tokens: &auth.Tokens{Store: store, BootstrapSHA256: cfg.BootstrapTokenSHA256}}
	if cfg.Auth == AuthOff {
		log.Warnw("LENS_AUTH=off: every route answers without a token; only run this on a trusted network")
	}
	f, err := build(ctx, s.Deps)
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", name, err)
	}
	if f.Close != nil {
		s.closers = append(s.closers, f.Close)
	}
	s.start = f.Start
	handler, err := assemble(s.Deps, f)
	if err != nil {
		return nil, err
	}
	s.drainer = &handlers.Drainer{Inner: handler, QuietPeriod: cfg.DrainQuietPeriod,
		HealthCheck: func(w http.ResponseWriter, r *http.Request) { readiness(w, r, store, f) }}
	s.Handler = s.drainer
	return s, nil
}

// Start runs the function's Start hook in the background, once; Run calls it after the server
// listens, tests that serve Handler themselves call it. Cancelling ctx, or Close, stops it.
func (s *Server) Start(ctx context.Context) {
	if s.start == nil || s.started != nil {
		return
	}
	ctx, s.stopStart = context.WithCancel(ctx)
	s.started = make(chan struct{})
	go func() {
		defer close(s.started)
		s.start(ctx)
	}()
}

// stopLoops cancels Start's context and waits for it to return (bounded by ctx).
func (s *Server) stopLoops(ctx context.Context) error {
	if s.started == nil {
		return nil
	}
	s.stopStart()
	select {
	case <-s.started:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("the function's Start hook did not return after its context ended: %w", ctx.Err())
	}
}

// Close stops the Start hook and waits for it, then releases the function, the store and the
// embedded server, newest first.
func (s *Server) Close(ctx context.Context) error {
	err := s.stopLoops(ctx)
	for i := len(s.closers) - 1; i >= 0; i-- {
		err = errors.Join(err, s.closers[i](ctx))
	}
	s.closers = nil
	if s.Deps.Log != nil {
		_ = s.Deps.Log.Sync()
	}
	return err
}

// Run serves the function on PORT until ctx is cancelled, then drains: probes fail at once,
// the server waits for a quiet period without requests, finishes in-flight ones and closes.
func Run(ctx context.Context, cfg Config, name string, build Builder) error {
	s, err := NewServer(ctx, cfg, name, build)
	if err != nil {
		return err
	}
	log := s.Deps.Log
	listener, err := net.Listen("tcp", net.JoinHostPort(cfg.ListenHost, strconv.Itoa(cfg.Port)))
	if err != nil {
		return errors.Join(err, s.Close(ctx))
	}
	// HTTP/1.1 and prior-knowledge h2c, so the Knative port can be named h2c.
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: s.Handler, ReadHeaderTimeout: 30 * time.Second, Protocols: &protocols}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(listener) }()
	log.Infow("serving", "address", listener.Addr().String(), "sink", cfg.Sink != "", "revision", cfg.Revision)
	s.Start(ctx) // ctx ends when the drain begins

	select {
	case err := <-serveErr:
		return errors.Join(err, s.Close(context.WithoutCancel(ctx)))
	case <-ctx.Done():
	}
	log.Info("draining")
	s.drainer.Drain()
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	err = errors.Join(srv.Shutdown(shutdownCtx), s.Close(shutdownCtx))
	log.Info("stopped")
	return err
}

func openStore(ctx context.Context, cfg Config, m *Metrics, log *zap.SugaredLogger) (state.Store, func(), error) {
	url, stop := cfg.RedisURL, func() {}
	if url == "" {
		embedded, err := redisstore.StartEmbedded()
		if err != nil {
			return nil, nil, err
		}
		log.Warnw("REDIS_URL is not set: using an embedded in-process store whose data lives only as long as this process",
			"address", embedded.URL())
		url, stop = embedded.URL(), func() { embedded.Close() }
	}
	health := &storeHealth{log: log}
	observe := func(op string, d time.Duration, err error) {
		m.observeStore(op, d, err)
		health.observe(op, err)
	}
	store, err := redisstore.Open(ctx, url, redisstore.Options{Prefix: cfg.StorePrefix, Observe: observe, TLSCAFile: cfg.RedisCAFile})
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("open state store: %w", err)
	}
	return store, stop, nil
}

func assemble(d Deps, f *Function) (http.Handler, error) {
	log, m, store := d.Log, d.Metrics, d.Store
	routes := []Route{
		{Method: http.MethodGet, Path: "/healthz", Scope: auth.Public, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("ok\n"))
		})},
		{Method: http.MethodGet, Path: "/readyz", Scope: auth.Public, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { readiness(w, r, store, f) })},
		// Open like the probes, so Prometheus scrapes without a token; it carries counts only.
		{Method: http.MethodGet, Path: "/metrics", Scope: auth.Public, Handler: m.handler()},
	}
	if len(f.Events) > 0 {
		handlers := make(map[string]cloudevent.Handler, len(f.Events))
		for t, h := range f.Events {
			handlers[t] = func(ctx context.Context, e cloudevent.Event) error { return storeProblem(h(ctx, e)) }
		}
		recv, err := cloudevent.NewReceiver(cloudevent.ReceiverConfig{
			Handlers: handlers, Dedupe: newClaimDeduper(store, d.Config.InstanceID), Observe: m.observeReceived,
			Log: func(msg string, kv ...any) {
				if !mentionsStoreOutage(kv) { // an outage is logged once, by the store's observer
					log.Warnw(msg, kv...)
				}
			},
		})
		if err != nil {
			return nil, err
		}
		// Events are capped, validated and deduplicated; with LENS_EVENT_TOKEN they also need the
		// credential (the local Broker forwards the sender's), and the work they create is owned
		// by their sender (eventCaller). The Knative Broker sends no token: there the Trigger's
		// subscriber is reached only inside the cluster (README "Security").
		routes = append(routes, Route{Method: http.MethodPost, Path: "/events", Scope: auth.Public,
			Handler: eventCaller(d.Config.EventToken, recv), MaxBodyBytes: MaxEventBytes})
	}
	rt, err := newRouter(&guard{cfg: d.Config, tokens: d.Tokens}, append(routes, f.Routes...))
	if err != nil {
		return nil, err
	}
	return problem.WithRequestID(m.instrument(log, rt)), nil
}

// EventOwnerPrefix starts the owner of work an event created: "event:" and the event's source
// (e.g. event:/lensfn/workflow-orchestrator), where a request's work is owned by its token.
const EventOwnerPrefix = "event:"

// eventCaller checks the caller of /events: the Host must be an internal one (egress.InternalHost:
// a Knative Broker delivers to the subscriber's cluster-internal address, while a request through
// the public ingress, or a DNS-rebinding page, names a public host), and the event credential
// must come with it when there is one (401 without it). It makes the event's sender the caller
// of its handler, so work the event creates carries an owner.
func eventCaller(token Secret, next http.Handler) http.Handler {
	want := []byte("Bearer " + token.Reveal())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Brokers deliver to a subscriber's internal address; a public name is the ingress.
		if !egress.InternalHost(r.Host) {
			problem.Write(w, r, problem.New(problem.CodeForbidden, "events are taken only at the function's cluster-internal address, not at %q", r.Host))
			return
		}
		if token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="lensfn-events"`)
			problem.Write(w, r, problem.New(problem.CodeUnauthorized, "events need the stack's event credential (Authorization: Bearer, LENS_EVENT_TOKEN)"))
			return
		}
		source := r.Header.Get("Ce-Source")
		if source == "" {
			source = "unknown"
		}
		caller := auth.Token{ID: EventOwnerPrefix + source, Name: "event sender"}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, caller)))
	})
}

// MaxEventBytes caps a CloudEvent delivered to /events: the catalogue's payloads are small.
const MaxEventBytes = 1 << 20

// WarmingPrefix starts each line of a ready function's /readyz that names start-up work
// still in progress (Function.Warming).
const WarmingPrefix = "warming: "

func readiness(w http.ResponseWriter, r *http.Request, store state.Store, f *Function) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	err := store.Ping(ctx)
	if err == nil && f.Ready != nil {
		err = f.Ready(ctx)
	}
	if err != nil {
		http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	body := "ready\n"
	if f.Warming != nil {
		for _, item := range f.Warming() {
			body += WarmingPrefix + item + "\n"
		}
	}
	_, _ = w.Write([]byte(body))
}

// claimDeduper lets the CloudEvents receiver deduplicate through the state store's claims,
// owned by this process: a restart of the same instance takes over the claims its crashed
// predecessor left pending, and other instances wait at most one short pending TTL.
type claimDeduper struct {
	store state.Store
	owner state.ClaimOwner
}

const claimPrefix = "ce:"

func newClaimDeduper(store state.Store, instance string) claimDeduper {
	return claimDeduper{store: store, owner: state.ClaimOwner{Instance: instance, Incarnation: problem.NewRequestID()}}
}

func (d claimDeduper) Claim(ctx context.Context, key string, ttl time.Duration) (cloudevent.ClaimState, error) {
	c, err := d.store.Claim(ctx, claimPrefix+key, d.owner, ttl)
	if err != nil {
		return 0, err
	}
	switch c.State {
	case state.ClaimNew:
		return cloudevent.ClaimNew, nil
	case state.ClaimPending:
		return cloudevent.ClaimPending, nil
	}
	return cloudevent.ClaimDone, nil
}

func (d claimDeduper) Renew(ctx context.Context, key string, ttl time.Duration) error {
	return d.store.RenewClaim(ctx, claimPrefix+key, d.owner, ttl)
}

func (d claimDeduper) Complete(ctx context.Context, key, outcome string, ttl time.Duration) error {
	return d.store.CompleteClaim(ctx, claimPrefix+key, outcome, ttl)
}

func (d claimDeduper) Abandon(ctx context.Context, key string) error {
	return d.store.AbandonClaim(ctx, claimPrefix+key, d.owner)
}
