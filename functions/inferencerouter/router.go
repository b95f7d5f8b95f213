package inferencerouter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lensfn/lensfn/runtime/kvblock"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// Router is the proxy: its pools, indexes, metrics and HTTP handler.
type Router struct {
	cfg     Config
	main    *pool // every replica (non-pd); the decode side under pd
	prefill *pool // pd only
	metrics *metrics
	aux     *http.Client // the precise profile's /tokenize calls
	probe   *http.Client // health probes and scrapes
	// metricsHandler serves /metrics: promhttp through fasthttp's adaptor (a
	// scrape a second is not worth a second exposition writer)
	metricsHandler fasthttp.RequestHandler
	approx         *blockIndex            // prefix-affinity, optimized
	precise        *blockIndex            // precise-prefix
	kvModel        atomic.Pointer[string] // model named by the replicas' KV-event topics
	rngMu          sync.Mutex
	rng            *rand.Rand
	draining       atomic.Bool
	blockText      int // bytes of prompt text per approximate block
	maxBlocks      int // prompt blocks hashed per request
}

// New builds a router for cfg; Start runs its background loops.
func New(cfg Config) *Router {
	seed := uint64(cfg.Seed)
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	// probes, scrapes and the precise profile's /tokenize calls: not on the
	// hot path, so net/http with its timeouts
	transport := &http.Transport{
		Proxy:               nil, // replicas are addressed directly, never through an environment proxy
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	rt := &Router{cfg: cfg, metrics: newMetrics(),
		aux:       &http.Client{Transport: transport, CheckRedirect: noRedirects},
		probe:     &http.Client{Transport: transport, Timeout: 2 * time.Second, CheckRedirect: noRedirects},
		approx:    newBlockIndex(cfg.IndexBlocks),
		precise:   newBlockIndex(cfg.IndexBlocks),
		rng:       rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		blockText: cfg.BlockSize * cfg.CharsPerToken,
		maxBlocks: cfg.IndexBlocks,
	}
	rt.maxBlocks = min(cfg.IndexBlocks, 1<<16)
	if cfg.Profile == ProfilePD {
		rt.prefill = newPool("prefill", cfg.PrefillReplicas, cfg)
		rt.main = newPool("decode", cfg.DecodeReplicas, cfg)
	} else {
		rt.main = newPool("", cfg.Replicas, cfg)
	}
	rt.metrics.ownProfile = string(cfg.Profile)
	rt.metrics.ownAdded = rt.metrics.addedLatency.WithLabelValues(string(cfg.Profile))
	for _, p := range rt.pools() {
		for _, r := range p.replicas {
			rt.metrics.replicaUp.WithLabelValues(p.name, r.base).Set(1)
			rt.metrics.bindReplica(p, r, string(cfg.Profile), "balanced")
			r.inflightGauge.Set(0)
		}
	}
	rt.metricsHandler = fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(rt.metrics.registry, promhttp.HandlerOpts{}))
	return rt
}

func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

func (rt *Router) pools() []*pool {
	if rt.prefill != nil {
		return []*pool{rt.prefill, rt.main}
	}
	return []*pool{rt.main}
}

// Start runs the health probes, queue scrapes and (precise-prefix) the
// KV-event subscriber until ctx ends; it returns once they are running
// and a stop function that waits for them.
func (rt *Router) Start(ctx context.Context) (stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var closeSub func()
	if rt.cfg.Profile == ProfilePrecisePrefix {
		closeSub, err = subscribeKVEvents(ctx, rt.cfg.ZMQEndpoint, rt.handleKVBatch)
		if err != nil {
			cancel()
			return nil, err
		}
	}
	for _, p := range rt.pools() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.watch(ctx, rt.probe, rt.cfg.HealthInterval, rt.cfg.ScrapeInterval, func(r *replica, up bool) { rt.setUp(p, r, up) })
		}()
	}
	return func() {
		cancel()
		wg.Wait()
		if closeSub != nil {
			closeSub()
		}
	}, nil
}

func (rt *Router) setUp(p *pool, r *replica, up bool) {
	v := 0.0
	if up {
		v = 1
	}
	rt.metrics.replicaUp.WithLabelValues(p.name, r.base).Set(v)
}

// markDown takes a replica that refused a connection out of rotation
// until a probe finds it answering again.
func (rt *Router) markDown(p *pool, r *replica) {
	if r.down.CompareAndSwap(false, true) {
		rt.setUp(p, r, false)
	}
}

// handleKVBatch applies one ZMQ message of KV events to the precise index.
func (rt *Router) handleKVBatch(topic string, batch []byte) {
	hostPort, model, ok := topicHostPort(topic)
	var rep *replica
	if ok {
		for _, r := range rt.main.replicas {
			if r.hostPort == hostPort {
				rep = r
				break
			}
		}
	}
	if rep == nil {
		rt.metrics.kvEvents.WithLabelValues("unknown", "ignored").Inc()
		return
	}
	if cur := rt.kvModel.Load(); cur == nil || *cur != model {
		rt.kvModel.Store(&model)
	}
	events, err := decodeKVBatch(batch)
	for _, e := range events {
		switch e.kind {
		case "BlockStored":
			rt.precise.add(e.hashes, rep.index)
		case "BlockRemoved":
			rt.precise.remove(e.hashes, rep.index)
		case "AllBlocksCleared":
			rt.precise.clear(rep.index)
		default:
			continue
		}
		rt.metrics.kvEvents.WithLabelValues(rep.base, e.kind).Inc()
	}
	if err != nil {
		rt.metrics.kvEvents.WithLabelValues(rep.base, "malformed").Inc()
	}
	rt.metrics.indexBlocks.WithLabelValues("precise").Set(float64(rt.precise.len()))
}

// handle routes the router's own endpoints and proxies the rest.
func (rt *Router) handle(ctx *fasthttp.RequestCtx) {
	path := ctx.Path()
	switch string(path) {
	case "/health":
		ctx.SetStatusCode(fasthttp.StatusOK)
		return
	case "/ready", "/health/ready":
		// the process's readiness only: replicas come and go behind it (the
		// deployer probes them itself; replica_up says which answer), and a
		// router whose replicas are still starting must not be restarted
		if rt.draining.Load() {
			writeError(ctx, fasthttp.StatusServiceUnavailable, "router is shutting down")
			return
		}
		ctx.SetStatusCode(fasthttp.StatusOK)
		return
	case "/metrics":
		rt.metricsHandler(ctx)
		return
	}
	if rt.draining.Load() {
		writeError(ctx, fasthttp.StatusServiceUnavailable, "router is shutting down")
		return
	}
	// routing reads the decoded, normalised path; the replica gets the path
	// as the client sent it (decoding it again here would let an escaped
	// "%252e%252e" pass the /v1/ check and reach the replica as "..")
	if rest, ok := bytes.CutPrefix(path, balancedPrefix); ok && len(rest) > 0 && rest[0] == '/' {
		sent, ok := bytes.CutPrefix(ctx.URI().PathOriginal(), balancedPrefix)
		if !ok || len(sent) == 0 || sent[0] != '/' {
			writeError(ctx, fasthttp.StatusNotFound, "no route for "+string(path)+": a balanced path must start with /balanced/ as sent, not escaped")
			return
		}
		rt.serveBalanced(ctx, sent)
		return
	}
	if !bytes.HasPrefix(path, v1Prefix) && string(path) != "/tokenize" {
		writeError(ctx, fasthttp.StatusNotFound, "no route for "+string(path)+": the router proxies /v1/*, /tokenize and /balanced/...")
		return
	}
	rt.serveRouted(ctx, path)
}

var (
	balancedPrefix = []byte("/balanced")
	v1Prefix       = []byte("/v1/")
)

// readBody is the request body within the size bound. The server enforces
// the bound while reading (its ErrorHandler answers 413); this check covers
// a handler called without that server.
func (rt *Router) readBody(ctx *fasthttp.RequestCtx) ([]byte, bool) {
	body := ctx.PostBody()
	if int64(len(body)) > rt.cfg.MaxBodyBytes {
		writeError(ctx, fasthttp.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes is over the router's limit of %d", len(body), rt.cfg.MaxBodyBytes))
		return nil, false
	}
	return body, true
}

// serveBalanced is the plain round-robin endpoint: /balanced/<path> goes to
// <replica>/<path>, with no look at the body (path as the client sent it).
func (rt *Router) serveBalanced(ctx *fasthttp.RequestCtx, path []byte) {
	start := time.Now()
	body, ok := rt.readBody(ctx)
	if !ok {
		return
	}
	p := rt.main
	exclude := uint64(0)
	for {
		rep := p.roundRobin(p.upMask() &^ exclude)
		if rep == nil {
			writeError(ctx, fasthttp.StatusServiceUnavailable, "no replica is accepting connections")
			return
		}
		rt.metrics.decisions.WithLabelValues("balanced", "round-robin").Inc()
		if rt.forward(ctx, p, rep, path, body, "balanced", start) {
			return
		}
		exclude |= 1 << rep.index
	}
}

// isCompletionPath says whether path's body carries a prompt worth routing on.
func isCompletionPath(path []byte) bool {
	return string(path) == "/v1/chat/completions" || string(path) == "/v1/completions" || string(path) == "/v1/responses"
}

// serveRouted routes on path, the normalised one, and forwards the path as
// the client sent it.
func (rt *Router) serveRouted(ctx *fasthttp.RequestCtx, path []byte) {
	start := time.Now()
	body, ok := rt.readBody(ctx)
	if !ok {
		return
	}
	sent := ctx.URI().PathOriginal()
	post := ctx.IsPost()
	profile := string(rt.cfg.Profile)
	if rt.cfg.Profile == ProfilePD && post && (string(path) == "/v1/chat/completions" || string(path) == "/v1/completions") {
		rt.servePD(ctx, sent, body, start)
		return
	}
	var hashes []uint64
	usesPrefix := post && isCompletionPath(path) &&
		(rt.cfg.Profile == ProfilePrefix || rt.cfg.Profile == ProfileOptimized || rt.cfg.Profile == ProfilePrecisePrefix)
	if usesPrefix {
		// the prompt text and its block hashes live only until the pick (the
		// index keeps hash values, not the slice): pooled per request
		sc := scratches.Get().(*scratch)
		defer putScratch(sc)
		if text, ok := fastPromptText(sc.text[:0], body); ok && rt.cfg.Profile != ProfilePrecisePrefix {
			sc.text = text
			hashes = appendTextBlockHashes(sc.hashes[:0], text, rt.blockText, rt.maxBlocks)
			sc.hashes = hashes
		} else {
			req, err := peekPrompt(body)
			if err != nil {
				writeError(ctx, fasthttp.StatusBadRequest, err.Error())
				return
			}
			if rt.cfg.Profile == ProfilePrecisePrefix {
				hashes = rt.preciseHashes(string(path), &req)
			} else {
				hashes = appendTextBlockHashes(nil, req.appendPromptText(nil), rt.blockText, rt.maxBlocks)
			}
		}
	}
	p := rt.main
	exclude := uint64(0)
	for {
		mask := p.upMask() &^ exclude
		if mask == 0 {
			writeError(ctx, fasthttp.StatusServiceUnavailable, "no replica is accepting connections")
			return
		}
		var rep *replica
		var reason string
		if !post {
			rep, reason = p.roundRobin(mask), "round-robin"
		} else {
			rep, reason = rt.pick(p, mask, hashes, usesPrefix)
		}
		if exclude != 0 {
			reason = "retry-" + reason
		}
		rt.metrics.decisions.WithLabelValues(profile, reason).Inc()
		if rt.forward(ctx, p, rep, sent, body, profile, start) {
			return
		}
		exclude |= 1 << rep.index
	}
}

// scratch is one request's prompt text and block hashes.
type scratch struct {
	text   []byte
	hashes []uint64
}

// maxScratchBytes bounds what a pooled scratch keeps: a huge prompt's
// buffers go to the garbage collector, not back to the pool.
const maxScratchBytes = 1 << 20

var scratches = sync.Pool{New: func() any { return &scratch{text: make([]byte, 0, 8<<10), hashes: make([]uint64, 0, 256)} }}

func putScratch(sc *scratch) {
	if cap(sc.text) > maxScratchBytes || cap(sc.hashes)*8 > maxScratchBytes {
		return
	}
	scratches.Put(sc)
}

// pick chooses a replica of p within mask by the router's profile.
func (rt *Router) pick(p *pool, mask uint64, hashes []uint64, usesPrefix bool) (*replica, string) {
	switch rt.cfg.Profile {
	case ProfileRandom:
		return rt.pickRandom(p, mask), "random"
	case ProfileLoad, ProfilePD:
		return rt.pickLeastLoaded(p, mask), "least-load"
	}
	mask, saturated := rt.saturationFilter(p, mask)
	index := rt.approx
	if rt.cfg.Profile == ProfilePrecisePrefix {
		index = rt.precise
	}
	var matched [MaxReplicas]int
	longest := 0
	if usesPrefix && len(hashes) > 0 {
		longest = index.match(hashes, mask, matched[:])
		profile := string(rt.cfg.Profile)
		rt.metrics.prefixQueries.WithLabelValues(profile).Inc()
		rt.metrics.queryBlocks.WithLabelValues(profile).Add(float64(len(hashes)))
	}
	var rep *replica
	reason := "no-prefix"
	if rt.cfg.Profile == ProfilePrefix {
		// affinity first: the longest cached prefix, in-flight load breaks ties
		if longest > 0 {
			var best uint64
			p.each(mask, func(r *replica) {
				if matched[r.index] == longest {
					best |= 1 << r.index
				}
			})
			rep, reason = rt.pickLeastLoaded(p, best), "prefix-hit"
		} else {
			rep = rt.pickLeastLoaded(p, mask)
		}
	} else {
		// optimized and precise-prefix: weighted prefix and load scores, as
		// llm-d's optimized baseline weighs them (prefix 3, queue 2)
		var maxLoad int64
		p.each(mask, func(r *replica) { maxLoad = max(maxLoad, r.load()) })
		bestScore := -1.0
		var best uint64
		p.each(mask, func(r *replica) {
			s := 2 * (1 - float64(r.load())/float64(maxLoad+1))
			if len(hashes) > 0 {
				s += 3 * float64(matched[r.index]) / float64(len(hashes))
			}
			switch {
			case s > bestScore+1e-9:
				bestScore, best = s, 1<<r.index
			case s > bestScore-1e-9:
				best |= 1 << r.index
			}
		})
		rep = rt.pickRandom(p, best)
		if matched[rep.index] > 0 {
			reason = "prefix-hit"
		} else {
			reason = "load"
		}
	}
	if saturated {
		reason += "-all-saturated"
	}
	if usesPrefix && len(hashes) > 0 {
		profile := string(rt.cfg.Profile)
		if matched[rep.index] > 0 {
			rt.metrics.prefixHits.WithLabelValues(profile).Inc()
			rt.metrics.hitBlocks.WithLabelValues(profile).Add(float64(matched[rep.index]))
		}
		if rt.cfg.Profile != ProfilePrecisePrefix {
			// the approximate index learns from its own decisions: the replica
			// about to serve these blocks will hold them
			rt.approx.add(hashes, rep.index)
			rt.metrics.indexBlocks.WithLabelValues("approximate").Set(float64(rt.approx.len()))
		}
	}
	return rep, reason
}

// saturationFilter drops replicas whose reported queue is over the
// threshold; when every replica is saturated it keeps them all.
func (rt *Router) saturationFilter(p *pool, mask uint64) (uint64, bool) {
	var kept uint64
	p.each(mask, func(r *replica) {
		if r.waiting.Load() <= int64(rt.cfg.SaturationQueue) {
			kept |= 1 << r.index
		}
	})
	if kept == 0 {
		return mask, true
	}
	return kept, false
}

func (rt *Router) pickRandom(p *pool, mask uint64) *replica {
	var idx [MaxReplicas]int
	n := 0
	p.each(mask, func(r *replica) { idx[n] = r.index; n++ })
	if n == 0 {
		return nil
	}
	rt.rngMu.Lock()
	k := rt.rng.IntN(n)
	rt.rngMu.Unlock()
	return p.replicas[idx[k]]
}

// pickLeastLoaded returns the replica of mask with the lowest load, a
// random one among equals.
func (rt *Router) pickLeastLoaded(p *pool, mask uint64) *replica {
	var best uint64
	lowest := int64(-1)
	p.each(mask, func(r *replica) {
		l := r.load()
		switch {
		case lowest < 0 || l < lowest:
			lowest, best = l, 1<<r.index
		case l == lowest:
			best |= 1 << r.index
		}
	})
	return rt.pickRandom(p, best)
}

// preciseHashes tokenizes the prompt on a replica (its /tokenize; the
// router has no tokenizer of its own and must use the replicas') and
// computes the block hashes the replicas' KV events name. A failed
// tokenize routes without a prefix.
func (rt *Router) preciseHashes(path string, req *promptRequest) []uint64 {
	var tokBody []byte
	var err error
	switch {
	case path == "/v1/chat/completions" && len(req.Messages) > 0:
		tokBody, err = json.Marshal(map[string]any{"model": req.Model, "messages": req.Messages})
	case len(req.Prompt) > 0 && req.Prompt[0] == '"':
		tokBody, err = json.Marshal(map[string]any{"model": req.Model, "prompt": req.Prompt})
	case len(req.Prompt) > 0 && req.Prompt[0] == '[':
		var ids []uint32
		if json.Unmarshal(req.Prompt, &ids) == nil {
			return rt.tokenBlockHashes(rt.hashModel(req.Model), ids)
		}
		return nil
	default:
		return nil
	}
	if err != nil {
		return nil
	}
	rep := rt.main.roundRobin(rt.main.upMask())
	if rep == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hreq, _ := http.NewRequestWithContext(ctx, http.MethodPost, rep.base+"/tokenize", bytes.NewReader(tokBody))
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := rt.aux.Do(hreq)
	if err != nil {
		rt.metrics.upstreamErrs.WithLabelValues(rt.main.name, rep.base, "tokenize").Inc()
		return nil
	}
	defer resp.Body.Close()
	var out struct {
		Tokens []uint32 `json:"tokens"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, rt.cfg.MaxBodyBytes)).Decode(&out) != nil {
		rt.metrics.upstreamErrs.WithLabelValues(rt.main.name, rep.base, "tokenize").Inc()
		return nil
	}
	return rt.tokenBlockHashes(rt.hashModel(req.Model), out.Tokens)
}

// tokenBlockHashes are the hashes the replicas' KV events name for these
// prompt tokens (runtime/kvblock, the simulator's own function), at most
// maxBlocks of them.
func (rt *Router) tokenBlockHashes(model string, tokens []uint32) []uint64 {
	tokens = tokens[:min(len(tokens), rt.maxBlocks*rt.cfg.BlockSize)]
	return kvblock.NewHasher(rt.cfg.BlockSize, rt.cfg.HashSeed).AppendBlockHashes(nil, model, tokens)
}

// hashModel is the model name the replicas root their block hashes at: the
// one their KV-event topics name, else the request's.
func (rt *Router) hashModel(requested string) string {
	if m := rt.kvModel.Load(); m != nil {
		return *m
	}
	return requested
}
