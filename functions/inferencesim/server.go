package inferencesim

import (
	"bytes"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine/textgen"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/limits"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/metrics"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/openai"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/pacer"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/render"
	"github.com/lensfn/lensfn/runtime/enginemodel"
	"github.com/lensfn/lensfn/wasm-modules/latency"
	"github.com/lensfn/lensfn/wasm-modules/stepcost"
)

// CalculatorResolver builds the latency calculator named by
// --latency-calculator (or /admin/config). The default resolver knows the
// built-in "constant" and "per-token" of the latency core; cmd/inference-sim
// passes WASMCalculators.Resolve, which also loads WebAssembly calculators by
// name or path.
type CalculatorResolver func(name string, p latency.Config) (latency.Calculator, error)

// EngineStepCost is a step-cost model the engine model can run on: a WASM module's (through
// the host) or the native core's. Err reports a module's first failed step.
type EngineStepCost interface {
	enginemodel.StepCoster
	RequestOverhead() float64
	Err() error
}

// StepCostResolver builds the step-cost module --step-cost-module names, configured with the
// engine's model, hardware, TP and coefficients.
type StepCostResolver func(module string, cfg stepcost.Config) (EngineStepCost, error)

// WithStepCostResolver sets how --step-cost-module is loaded (cmd/inference-sim passes
// WASMCalculators.ResolveStepCost); without one, a module is refused at start.
func WithStepCostResolver(r StepCostResolver) Option {
	return func(s *Simulator) { s.resolveStepCost = r }
}

// Option adjusts a Simulator.
type Option func(*Simulator)

// WithCalculatorResolver replaces the latency calculator resolver.
func WithCalculatorResolver(r CalculatorResolver) Option {
	return func(s *Simulator) { s.resolve = r }
}

// WithLogger sets the logger (default: slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(s *Simulator) { s.log = l } }

// WithCoarseTimers disables the sub-millisecond pacer (plain timer sleeps
// only): cheaper when no latency is below a few milliseconds.
func WithCoarseTimers() Option { return func(s *Simulator) { s.coarse = true } }

// settings are the parts of the configuration /admin/config may change at
// run time; they are swapped atomically as a whole.
type settings struct {
	failureRate   int
	failureTypes  []string
	calcName      string
	latencyParams latency.Config
	calc          latency.Calculator
	fake          *metrics.FakeMetrics
}

// Simulator is the inference simulator: one rank per data-parallel rank,
// each with its own port, scheduler, metrics and KV cache.
type Simulator struct {
	cfg      *config.Config
	log      *slog.Logger
	logDebug bool // --v 4 or more: each generation request is logged
	logTrace bool // --v 5 or more: admissions are logged
	resolve  CalculatorResolver
	// resolveStepCost loads --step-cost-module (nil: modules are refused).
	resolveStepCost StepCostResolver
	coarse          bool
	pacer           *pacer.Pacer
	settings        atomic.Pointer[settings]
	adminMu         sync.Mutex
	ranks           []*rank
	started         time.Time
	draining        atomic.Bool
	tlsConf         *tls.Config
	dataset         *engine.Dataset
	// inFlight is the memory budget of the generation requests being served, over every rank.
	inFlight *limits.InFlight

	// tokenizer tokenizes prompts: the dummy one, or --tokenizer's tokenizer.json.
	tokenizer textgen.Tokenizer

	// beforeEmit, when set (by in-package tests only), runs after a stream's wait
	// and before its due frames are built: a test makes the server late with it.
	beforeEmit func()
}

// rank is one data-parallel rank.
type rank struct {
	sim            *Simulator
	cfg            *config.Config
	index          int
	port           int
	portStr        string
	sched          *engine.Scheduler
	metrics        *metrics.Set
	loras          *engine.LoRARegistry
	kv             *engine.KV
	engine         *engineRank // the engine model, nil unless --latency-calculator engine
	gen            *engine.Generator
	counter        atomic.Uint64
	server         *fasthttp.Server
	metricsHandler fasthttp.RequestHandler
	apiAuth        []byte // "Bearer <--api-key>", nil when unset
	adminAuth      []byte // "Bearer <--admin-token>", nil when unset
}

// New builds a simulator from a validated configuration.
func New(cfg *config.Config, opts ...Option) (*Simulator, error) {
	s := &Simulator{cfg: cfg, log: slog.Default(), resolve: latency.New, started: time.Now(),
		inFlight: limits.NewInFlight(int64(cfg.MaxInFlightRequestMB) << 20)}
	for _, o := range opts {
		o(s)
	}
	s.logVerbosity()
	s.logConfig()
	tok, err := s.loadTokenizer()
	if err != nil {
		return nil, err
	}
	s.tokenizer = tok
	calcName := cfg.LatencyCalculator
	if cfg.EngineModel() { // the engine times generation; the calculator stays for /admin/config
		calcName = latency.NameAuto
	}
	calc, err := s.resolve(calcName, cfg.Latency)
	if err != nil {
		return nil, fmt.Errorf("latency calculator: %w", err)
	}
	s.settings.Store(&settings{failureRate: cfg.FailureInjectionRate, failureTypes: cfg.FailureTypes,
		calcName: cfg.LatencyCalculator, latencyParams: cfg.Latency, calc: calc, fake: cfg.FakeMetrics})
	s.pacer = pacer.New(s.coarse)
	if cfg.DatasetPath != "" {
		ds, err := openDataset(cfg, s.log)
		if err != nil {
			return nil, err
		}
		s.dataset = ds
	}
	if cfg.SSLCertFile != "" || cfg.SelfSignedCerts {
		tc, err := tlsConfig(cfg)
		if err != nil {
			return nil, err
		}
		s.tlsConf = tc
	}
	var resolved *enginemodel.Resolved
	var stepCost EngineStepCost
	if cfg.EngineModel() {
		if resolved, err = cfg.ResolveEngine(); err != nil {
			return nil, fmt.Errorf("engine model: %w", err)
		}
		if stepCost, err = s.stepCoster(cfg, resolved); err != nil {
			return nil, fmt.Errorf("engine model: %w", err)
		}
		s.log.Info("engine model", "model", resolved.CostConfig.Model.Name, "hardware", resolved.CostConfig.Hardware.Name,
			"tensor_parallel_size", resolved.CostConfig.TensorParallelSize, "kv_cache_blocks", resolved.Engine.KVBlocks,
			"max_num_seqs", resolved.Engine.MaxNumSeqs, "max_num_batched_tokens", resolved.Engine.MaxNumBatchedTokens)
	}
	ranks := []int{0}
	if cfg.DataParallelRank >= 0 {
		ranks = []int{cfg.DataParallelRank}
	} else {
		for i := 1; i < cfg.DataParallelSize; i++ {
			ranks = append(ranks, i)
		}
	}
	for i, idx := range ranks {
		port := cfg.Port + i
		r := &rank{sim: s, cfg: cfg, index: idx, port: port, portStr: strconv.Itoa(port),
			apiAuth: bearer(cfg.APIKey), adminAuth: bearer(cfg.AdminToken)}
		r.loras = engine.NewLoRARegistry(cfg.LoRAModules)
		kvBlocks := cfg.KVCacheSize
		if resolved != nil {
			kvBlocks = resolved.Engine.KVBlocks
		}
		r.metrics = metrics.New(metrics.Settings{Model: cfg.ServedModelNames[0], MaxModelLen: cfg.MaxModelLen, MaxLoRAs: cfg.MaxLoRAs,
			BlockSize: cfg.BlockSize, KVCacheSize: kvBlocks, EnableKVCache: cfg.EnableKVCache, EngineModel: resolved != nil},
			func() *metrics.FakeMetrics { return s.settings.Load().fake })
		rm := r.metrics
		mm := rm.Running.WithLabelValues(rm.BaseModel)
		wm := rm.Waiting.WithLabelValues(rm.BaseModel)
		r.sched = engine.NewScheduler(cfg.MaxNumSeqs, cfg.MaxWaitingQueueLength, cfg.MaxLoRAs, engine.Hooks{
			OnChange: func(running, waiting int) { mm.Set(float64(running)); wm.Set(float64(waiting)) },
			OnLoRA:   func(run, wait string) { rm.SetLoRAInfo(cfg.MaxLoRAs, run, wait) },
		})
		r.metricsHandler = fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(rm.Registry, promhttp.HandlerOpts{}))
		if cfg.EnableKVCache {
			usage := rm.KVUsage.WithLabelValues(rm.BaseModel)
			kv, err := engine.NewKV(cfg, idx, port, usage.Set)
			if err != nil {
				return nil, err
			}
			r.kv = kv
		}
		r.gen = engine.NewGenerator(cfg, s.dataset, r.kv, r.loras)
		r.gen.Tokenizer = s.tokenizer
		if resolved != nil {
			if r.engine, err = newEngineRank(cfg, resolved, stepCost, rm, s.pacer, s.log); err != nil {
				return nil, err
			}
		}
		r.server = &fasthttp.Server{
			Handler:            r.handle,
			ErrorHandler:       r.handleBadRequest,
			Name:               "fasthttp",
			MaxRequestBodySize: cfg.MaxRequestBodySizeMB << 20,
			ReadTimeout:        0,
			IdleTimeout:        90 * time.Second,
			NoDefaultDate:      false,
			CloseOnShutdown:    true,
			TLSConfig:          s.tlsConf,
			StreamRequestBody:  false,
			ReduceMemoryUsage:  false,
			Concurrency:        1 << 16,
		}
		s.ranks = append(s.ranks, r)
	}
	return s, nil
}

// Ports returns the port of every rank.
func (s *Simulator) Ports() []int {
	out := make([]int, len(s.ranks))
	for i, r := range s.ranks {
		out[i] = r.port
	}
	return out
}

// Handler returns rank i's request handler (tests, embedding).
func (s *Simulator) Handler(i int) fasthttp.RequestHandler { return s.ranks[i].handle }

// Serve listens on every rank's port until ctx is cancelled, then drains.
func (s *Simulator) Serve(ctx context.Context) error {
	lns := make([]net.Listener, len(s.ranks))
	for i, r := range s.ranks {
		ln, err := net.Listen("tcp", net.JoinHostPort(s.cfg.Host, r.portStr))
		if err != nil {
			for _, l := range lns[:i] {
				l.Close()
			}
			return fmt.Errorf("rank %d: %w", r.index, err)
		}
		lns[i] = ln
	}
	return s.ServeListeners(ctx, lns)
}

// ServeListeners serves rank i on lns[i] until ctx is cancelled, then
// stops accepting, lets in-flight requests finish (up to
// --shutdown-timeout) and returns.
func (s *Simulator) ServeListeners(ctx context.Context, lns []net.Listener) error {
	if len(lns) != len(s.ranks) {
		return fmt.Errorf("need %d listeners, got %d", len(s.ranks), len(lns))
	}
	errc := make(chan error, len(lns))
	for i, r := range s.ranks {
		ln := lns[i]
		if s.tlsConf != nil {
			ln = tls.NewListener(ln, s.tlsConf)
		}
		s.log.Info("inference-sim listening", "rank", r.index, "addr", ln.Addr().String(), "model", s.cfg.Model, "tls", s.tlsConf != nil)
		go func() { errc <- r.server.Serve(ln) }()
	}
	select {
	case err := <-errc:
		s.shutdown()
		return err
	case <-ctx.Done():
	}
	s.shutdown()
	return nil
}

func (s *Simulator) shutdown() {
	s.draining.Store(true)
	for _, r := range s.ranks {
		r.sched.Shutdown()
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, r := range s.ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.server.ShutdownWithContext(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				s.log.Log(context.Background(), levelWarn, "shutdown", "rank", r.index, "err", err)
			}
		}()
	}
	wg.Wait()
	for _, r := range s.ranks {
		if r.kv != nil {
			r.kv.Close()
		}
		if r.engine != nil {
			r.engine.close()
		}
	}
	if s.dataset != nil {
		s.dataset.Close()
	}
}

const (
	ctJSON  = "application/json"
	hdrPod  = "x-inference-pod"
	hdrPort = "x-inference-port"
	hdrNS   = "x-inference-namespace"
)

// handle routes one request.
func (r *rank) handle(ctx *fasthttp.RequestCtx) {
	if r.cfg.PodName != "" {
		ctx.Response.Header.Set(hdrPod, r.cfg.PodName)
		ctx.Response.Header.Set(hdrPort, r.portStr)
	}
	if r.cfg.PodNamespace != "" {
		ctx.Response.Header.Set(hdrNS, r.cfg.PodNamespace)
	}
	if r.cfg.EnableRequestIDHeaders {
		if id := ctx.Request.Header.Peek("X-Request-Id"); len(id) > 0 {
			ctx.Response.Header.SetBytesV("X-Request-Id", id)
		}
	}
	path := ctx.Path()
	if r.apiAuth != nil && bytes.HasPrefix(path, prefixV1) && !authorized(ctx, r.apiAuth) {
		writeUnauthorized(ctx, "Unauthorized: this endpoint requires the server's API key (Authorization: Bearer <key>).")
		return
	}
	if r.adminAuth != nil && bytes.HasPrefix(path, prefixAdmin) && !authorized(ctx, r.adminAuth) {
		writeUnauthorized(ctx, "Unauthorized: /admin requires the admin token (Authorization: Bearer <token>).")
		return
	}
	rt, ok := routes[string(path)]
	if !ok {
		openai.WriteError(ctx, openai.NewError(404, "Not Found: "+string(ctx.Path())))
		return
	}
	if !rt.allows(ctx.Method()) {
		openai.WriteError(ctx, openai.NewError(405, rt.notAllowed))
		return
	}
	rt.handle(r, ctx)
}

func (r *rank) handleModels(ctx *fasthttp.RequestCtx) {
	models := make([]render.Model, 0, len(r.cfg.ServedModelNames)+r.cfg.MaxLoRAs)
	for _, name := range r.cfg.ServedModelNames {
		models = append(models, render.Model{ID: name, Root: r.cfg.Model})
	}
	for _, l := range r.loras.List() {
		models = append(models, render.Model{ID: l.Name, Root: l.Path, Parent: r.cfg.ServedModelNames[0]})
	}
	bp := openai.GetBuf()
	*bp = render.Models((*bp)[:0], time.Now().Unix(), models)
	ctx.Response.Header.SetContentType(ctJSON)
	ctx.SetBody(*bp)
	openai.PutBuf(bp)
}

var (
	prefixV1    = []byte("/v1/")
	prefixAdmin = []byte("/admin/")
)

func bearer(token string) []byte {
	if token == "" {
		return nil
	}
	return []byte("Bearer " + token)
}

// authorized compares the Authorization header with want in constant time
// (exactly, as vLLM's --api-key middleware does).
func authorized(ctx *fasthttp.RequestCtx, want []byte) bool {
	return subtle.ConstantTimeCompare(ctx.Request.Header.Peek("Authorization"), want) == 1
}

func writeUnauthorized(ctx *fasthttp.RequestCtx, msg string) {
	ctx.Response.Header.Set("WWW-Authenticate", "Bearer")
	openai.WriteError(ctx, openai.NewError(401, msg))
}

// handleBadRequest answers a request fasthttp could not read with an
// OpenAI-style error instead of its plain-text default: 413 for a body
// over --max-request-body-size-mb, 431 for oversized headers, 408 for a
// read timeout, 400 otherwise.
func (r *rank) handleBadRequest(ctx *fasthttp.RequestCtx, err error) {
	var small *fasthttp.ErrSmallBuffer
	var netErr net.Error
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		openai.WriteError(ctx, openai.NewError(413, "Request body too large: the limit is "+strconv.Itoa(r.cfg.MaxRequestBodySizeMB)+
			" MiB (--max-request-body-size-mb)."))
	case errors.As(err, &small):
		openai.WriteError(ctx, openai.NewError(431, "Request headers too large."))
	case errors.As(err, &netErr) && netErr.Timeout():
		openai.WriteError(ctx, openai.NewError(408, "Request timeout."))
	default:
		openai.WriteError(ctx, openai.NewError(400, "Failed to read the HTTP request."))
	}
}
