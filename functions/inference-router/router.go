package inferencerouter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lensfn/lensfn/runtime/kvblock"
)

// Router is the proxy: its pools, indexes, metrics and HTTP handler.
type Router struct {
	cfg       Config
	main      *pool // every replica (non-pd); the decode side under pd
	prefill   *pool // pd only
	metrics   *metrics
	client    *http.Client           // upstream calls; no overall timeout (streams), see forward
	probe     *http.Client           // health probes and scrapes
	approx    *blockIndex            // prefix-affinity, optimized
	precise   *blockIndex            // precise-prefix
	kvModel   atomic.Pointer[string] // model named by the replicas' KV-event topics
	rngMu     sync.Mutex
	rng       *rand.Rand
	draining  atomic.Bool
	blockText int // bytes of prompt text per approximate block
	maxBlocks int // prompt blocks hashed per request
}

// New builds a router for cfg; Start runs its background loops.
func New(cfg Config) *Router {
	seed := uint64(cfg.Seed)
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	transport := &http.Transport{
		Proxy:                 nil, // replicas are addressed directly, never through an environment proxy
		DialContext:           (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          4096,
		MaxIdleConnsPerHost:   1024,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true, // bytes pass through untouched
		ResponseHeaderTimeout: cfg.UpstreamTimeout,
		ForceAttemptHTTP2:     false,
	}
	rt := &Router{cfg: cfg, metrics: newMetrics(),
		client:    &http.Client{Transport: transport, CheckRedirect: noRedirects},
		probe:     &http.Client{Transport: transport, Timeout: 2 * time.Second, CheckRedirect: noRedirects},
		approx:    newBlockIndex(cfg.IndexBlocks),
		precise:   newBlockIndex(cfg.IndexBlocks),
		rng:       rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		blockText: cfg.BlockSize * cfg.CharsPerToken,
		maxBlocks: cfg.IndexBlocks,
	}
	rt.maxBlocks = min(cfg.IndexBlocks, 1<<16)
	if cfg.Profile == ProfilePD {
		rt.prefill = newPool("prefill", cfg.PrefillReplicas)
		rt.main = newPool("decode", cfg.DecodeReplicas)
	} else {
		rt.main = newPool("", cfg.Replicas)
	}
	for _, p := range rt.pools() {
		for _, r := range p.replicas {
			rt.metrics.replicaUp.WithLabelValues(p.name, r.base).Set(1)
			rt.metrics.inflight.WithLabelValues(p.name, r.base).Set(0)
		}
	}
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

// ServeHTTP routes the router's own endpoints and proxies the rest.
func (rt *Router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch path {
	case "/health":
		w.WriteHeader(http.StatusOK)
		return
	case "/ready", "/health/ready":
		// the process's readiness only: replicas come and go behind it (the
		// deployer probes them itself; replica_up says which answer), and a
		// router whose replicas are still starting must not be restarted
		if rt.draining.Load() {
			writeError(w, http.StatusServiceUnavailable, "router is shutting down")
			return
		}
		w.WriteHeader(http.StatusOK)
		return
	case "/metrics":
		rt.metricsHandler().ServeHTTP(w, r)
		return
	}
	if rt.draining.Load() {
		writeError(w, http.StatusServiceUnavailable, "router is shutting down")
		return
	}
	if rest, ok := strings.CutPrefix(path, "/balanced"); ok && strings.HasPrefix(rest, "/") {
		rt.serveBalanced(w, r, rest)
		return
	}
	if !strings.HasPrefix(path, "/v1/") && path != "/tokenize" {
		writeError(w, http.StatusNotFound, "no route for "+path+": the router proxies /v1/*, /tokenize and /balanced/...")
		return
	}
	rt.serveRouted(w, r, path)
}

// readBody reads a request body within the size bound.
func (rt *Router) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	if r.ContentLength > rt.cfg.MaxBodyBytes {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes is over the router's limit of %d", r.ContentLength, rt.cfg.MaxBodyBytes))
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, rt.cfg.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is over the router's limit of %d bytes", rt.cfg.MaxBodyBytes))
		} else {
			writeError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		}
		return nil, false
	}
	return body, true
}

// serveBalanced is the plain round-robin endpoint: /balanced/<path> goes to
// <replica>/<path>, with no look at the body.
func (rt *Router) serveBalanced(w http.ResponseWriter, r *http.Request, path string) {
	start := time.Now()
	body, ok := rt.readBody(w, r)
	if !ok {
		return
	}
	p := rt.main
	exclude := uint64(0)
	for {
		rep := p.roundRobin(p.upMask() &^ exclude)
		if rep == nil {
			writeError(w, http.StatusServiceUnavailable, "no replica is accepting connections")
			return
		}
		rt.metrics.decisions.WithLabelValues("balanced", "round-robin").Inc()
		if rt.forward(w, r, p, rep, path, body, "balanced", start) {
			return
		}
		exclude |= 1 << rep.index
	}
}

// completionPaths are the bodies that carry a prompt worth routing on.
func isCompletionPath(path string) bool {
	return path == "/v1/chat/completions" || path == "/v1/completions" || path == "/v1/responses"
}

func (rt *Router) serveRouted(w http.ResponseWriter, r *http.Request, path string) {
	start := time.Now()
	body, ok := rt.readBody(w, r)
	if !ok {
		return
	}
	profile := string(rt.cfg.Profile)
	if rt.cfg.Profile == ProfilePD && r.Method == http.MethodPost && (path == "/v1/chat/completions" || path == "/v1/completions") {
		rt.servePD(w, r, path, body, start)
		return
	}
	var hashes []uint64
	usesPrefix := r.Method == http.MethodPost && isCompletionPath(path) &&
		(rt.cfg.Profile == ProfilePrefix || rt.cfg.Profile == ProfileOptimized || rt.cfg.Profile == ProfilePrecisePrefix)
	if usesPrefix {
		if text, ok := fastPromptText(nil, body); ok && rt.cfg.Profile != ProfilePrecisePrefix {
			hashes = appendTextBlockHashes(nil, text, rt.blockText, rt.maxBlocks)
		} else {
			req, err := peekPrompt(body)
			if err != nil {
				writeError(w, http.StatusBadRequest, err.Error())
				return
			}
			if rt.cfg.Profile == ProfilePrecisePrefix {
				hashes = rt.preciseHashes(r.Context(), path, &req)
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
			writeError(w, http.StatusServiceUnavailable, "no replica is accepting connections")
			return
		}
		var rep *replica
		var reason string
		if r.Method != http.MethodPost {
			rep, reason = p.roundRobin(mask), "round-robin"
		} else {
			rep, reason = rt.pick(p, mask, hashes, usesPrefix)
		}
		if exclude != 0 {
			reason = "retry-" + reason
		}
		rt.metrics.decisions.WithLabelValues(profile, reason).Inc()
		if rt.forward(w, r, p, rep, path, body, profile, start) {
			return
		}
		exclude |= 1 << rep.index
	}
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
func (rt *Router) preciseHashes(ctx context.Context, path string, req *promptRequest) []uint64 {
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
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	hreq, _ := http.NewRequestWithContext(ctx, http.MethodPost, rep.base+"/tokenize", bytes.NewReader(tokBody))
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := rt.client.Do(hreq)
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

// hopHeaders are connection-level headers a proxy must not forward.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func copyHeaders(dst, src http.Header) {
	for k, vs := range src {
		dst[k] = append(dst[k][:0:0], vs...)
	}
	for _, h := range hopHeaders {
		dst.Del(h)
	}
}

// forward sends the request to rep and relays the answer. It returns false
// only when the replica refused the connection (nothing was sent, so the
// caller may try another replica); every other outcome is answered here.
func (rt *Router) forward(w http.ResponseWriter, r *http.Request, p *pool, rep *replica, path string, body []byte, profile string, start time.Time) bool {
	resp, ok := rt.roundTrip(w, r, p, rep, path, body, profile, start)
	if !ok || resp == nil {
		return ok
	}
	defer rt.done(p, rep)
	defer resp.Body.Close()
	rt.relay(w, resp, p, rep, profile)
	return true
}

// roundTrip sends one upstream request with rep counted in flight. On a
// refused connection it marks rep down and returns (nil, false); on any
// other failure it answers 502 and returns (nil, true). The caller calls
// rt.done when it has finished with a non-nil response.
func (rt *Router) roundTrip(w http.ResponseWriter, r *http.Request, p *pool, rep *replica, path string, body []byte, profile string, start time.Time) (*http.Response, bool) {
	target := rep.base + path
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	ctx, cancel := context.WithTimeout(r.Context(), rt.cfg.UpstreamTimeout)
	out, err := http.NewRequestWithContext(ctx, r.Method, target, bytes.NewReader(body))
	if err != nil {
		cancel()
		writeError(w, http.StatusBadRequest, err.Error())
		return nil, true
	}
	copyHeaders(out.Header, r.Header)
	out.ContentLength = int64(len(body))
	if len(body) == 0 {
		out.Body = http.NoBody
	}
	rep.inflight.Add(1)
	rt.metrics.inflight.WithLabelValues(p.name, rep.base).Inc()
	if profile != "" {
		rt.metrics.addedLatency.WithLabelValues(profile).Observe(time.Since(start).Seconds())
	}
	resp, err := rt.client.Do(out)
	if err != nil {
		cancel()
		rt.done(p, rep)
		if isConnectError(err) {
			rt.metrics.upstreamErrs.WithLabelValues(p.name, rep.base, "connect").Inc()
			rt.markDown(p, rep)
			return nil, false
		}
		rt.metrics.upstreamErrs.WithLabelValues(p.name, rep.base, "transport").Inc()
		if r.Context().Err() == nil {
			writeError(w, http.StatusBadGateway, "replica "+rep.base+" failed: "+err.Error())
		}
		return nil, true
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, true
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error { err := c.ReadCloser.Close(); c.cancel(); return err }

func (rt *Router) done(p *pool, rep *replica) {
	rep.inflight.Add(-1)
	rt.metrics.inflight.WithLabelValues(p.name, rep.base).Dec()
}

// relay writes resp to the client: status, headers and body, flushed after
// every chunk read for event streams so tokens are never held back.
func (rt *Router) relay(w http.ResponseWriter, resp *http.Response, p *pool, rep *replica, profile string) {
	copyHeaders(w.Header(), resp.Header)
	w.Header().Set("X-Inference-Router-Replica", rep.base)
	w.WriteHeader(resp.StatusCode)
	rt.metrics.requests.WithLabelValues(profile, p.name, rep.base, strconv.Itoa(resp.StatusCode)).Inc()
	if resp.StatusCode >= 500 {
		rt.metrics.upstreamErrs.WithLabelValues(p.name, rep.base, "status").Inc()
	}
	stream := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	flusher, _ := w.(http.Flusher)
	bufp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bufp)
	buf := *bufp
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return // the client went away; closing the body cancels upstream
			}
			if stream && flusher != nil {
				flusher.Flush()
			}
		}
		if err != nil {
			if err != io.EOF {
				rt.metrics.upstreamErrs.WithLabelValues(p.name, rep.base, "transport").Inc()
			}
			return
		}
	}
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// isConnectError says whether err means the replica refused or could not
// be reached (so the request never left the router).
func isConnectError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// writeError writes an OpenAI-style error body.
func writeError(w http.ResponseWriter, status int, message string) {
	typ := map[int]string{400: "BadRequestError", 404: "NotFoundError", 413: "BadRequestError",
		502: "InternalServerError", 503: "ServiceUnavailableError"}[status]
	if typ == "" {
		typ = "InternalServerError"
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nil, "code": status}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
