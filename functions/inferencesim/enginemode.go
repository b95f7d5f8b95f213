package inferencesim

import (
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/metrics"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/openai"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/pacer"
	"github.com/lensfn/lensfn/runtime/enginemodel"
	"github.com/lensfn/lensfn/runtime/kvblock"
	"github.com/lensfn/lensfn/wasm-modules/stepcost"
)

// The engine model in real time (--latency-calculator engine): each rank runs one
// enginemodel.Engine in its own goroutine. The loop takes new requests, schedules a step,
// sleeps until the step's end on the pacer, commits it and tells every request that got a
// token; the request's stream (or its whole answer) sends what the engine produced. So TTFT
// and inter-token gaps are not configured: they emerge from the batching, as on vLLM.

// never is a deadline no clock reaches: a sequence waits for the engine, not for time.
const never = time.Duration(math.MaxInt64 / 2)

// engineTicket is one request in the engine: its sequences (one engine request per choice)
// and what the loop has produced of each, read by the request's goroutine. A one-choice
// request (the usual) keeps both inline, so the loop's per-token stores and the request's
// reads touch the ticket alone.
type engineTicket struct {
	seqs   []enginemodel.Seq
	prog   []seqProgress
	cached atomic.Int32 // prefix-cache hit of the first sequence
	wake   chan struct{}
	// mode says who owns the stream's state, its goroutine or the loop, and direct is the
	// stream the loop writes while it does (directwrite.go).
	mode   atomic.Int32
	direct *genCtx
	// ready is when the request reaches the engine: its arrival plus the API server's
	// per-request time (the step-cost model's request overhead).
	ready time.Duration

	oneSeq  [1]enginemodel.Seq
	oneProg [1]seqProgress
}

// seqProgress is what the loop has produced of one sequence.
type seqProgress struct {
	produced    atomic.Int32 // tokens produced so far
	first, last atomic.Int64 // when its first and latest tokens were produced (pacer time)
}

func newEngineTicket(n int) *engineTicket {
	t := &engineTicket{wake: make(chan struct{}, 1)}
	if n == 1 {
		t.seqs, t.prog = t.oneSeq[:], t.oneProg[:]
	} else {
		t.seqs, t.prog = make([]enginemodel.Seq, n), make([]seqProgress, n)
	}
	return t
}

// done reports whether every sequence has all its tokens.
func (t *engineTicket) done() bool {
	for i := range t.seqs {
		if int(t.prog[i].produced.Load()) < t.seqs[i].MaxOutput {
			return false
		}
	}
	return true
}

// sync points each unfinished sequence's deadline at now when the engine has produced its
// next token (or it has sent every token and its finish is due), else at never; it reports
// whether anything is due.
func (t *engineTicket) sync(r *engine.Request, now time.Duration) (due bool) {
	for i := range r.Seqs {
		s := &r.Seqs[i]
		if s.Finished {
			continue
		}
		produced := len(s.Tokens) // a sequence the engine does not run has all its tokens
		if i < len(t.seqs) && t.seqs[i].MaxOutput > 0 {
			produced = int(t.prog[i].produced.Load())
		}
		if s.Next < produced || s.Next >= len(s.Tokens) && produced >= len(s.Tokens) {
			s.Deadline, due = now, true
		} else {
			s.Deadline = never
		}
	}
	return due
}

// engineRank is a rank's engine and the goroutine that runs it.
type engineRank struct {
	eng      *enginemodel.Engine // the loop goroutine's alone
	cost     EngineStepCost
	log      *slog.Logger
	costErr  bool      // a step-cost failure was logged
	hashers  sync.Pool // of *kvblock.Hasher: request goroutines hash prompts at once, a Hasher is not safe to share
	model    string
	overhead time.Duration // the API server's time per request

	mu     sync.Mutex
	inbox  []*engineTicket
	aborts []*engineTicket
	wake   chan struct{}
	stop   chan struct{}
	done   chan struct{}

	// queued is the requests waiting (in the inbox or the engine's queue), for the
	// --max-waiting-queue-length bound; maxQueued that bound.
	queued    atomic.Int64
	maxQueued int64

	frame []byte // the loop's chunk being written to a stream (directwrite.go)
	// directChunks counts the chunks the loop wrote itself, directFallbacks the streams it
	// handed back because a socket was full (tests read them).
	directChunks, directFallbacks atomic.Int64

	running, waiting, kvUsage prometheus.Gauge
	preemptions               prometheus.Counter
	iterationTokens           prometheus.Observer
	reportedPreemptions       float64
}

func (e *engineRank) kick() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// submit hands a generated request to the engine: every sequence with tokens becomes an
// engine request over the prompt's block hashes. It refuses a request the engine could
// never hold (vLLM's context-length answer) and a full queue (429).
func (e *engineRank) submit(req *engine.Request) (*engineTicket, *openai.Error) {
	if e.maxQueued >= 0 && e.queued.Load() >= e.maxQueued {
		return nil, engine.ErrQueueFull
	}
	t := newEngineTicket(len(req.Seqs))
	t.ready = req.Admission.Arrival + e.overhead
	var hashes []uint64
	if ids := req.Prompt.IDs(); len(ids) > 0 {
		h := e.hashers.Get().(*kvblock.Hasher)
		hashes = h.AppendBlockHashes(nil, e.model, ids)
		e.hashers.Put(h)
	}
	for i := range req.Seqs {
		s := &req.Seqs[i]
		if len(s.Tokens) == 0 {
			continue
		}
		if err := e.eng.CheckFits(s.PromptTokens, len(s.Tokens)); err != nil {
			return nil, openai.NewError(400, err.Error())
		}
		t.seqs[i] = enginemodel.Seq{ID: uint64(i), PromptTokens: s.PromptTokens, BlockHashes: hashes, MaxOutput: len(s.Tokens), Owner: t}
		if req.Params.RemotePrefill { // P/D: the prompt's KV comes from the prefill instance
			t.seqs[i].Transferred = s.PromptTokens
		}
		s.Gaps = s.Gaps[:0]
		for k := 1; k < len(s.Tokens); k++ {
			s.Gaps = append(s.Gaps, never)
		}
		s.Deadline, s.End = never, never
	}
	e.queued.Add(1)
	e.mu.Lock()
	e.inbox = append(e.inbox, t)
	e.mu.Unlock()
	e.kick()
	return t, nil
}

// abort takes a request whose client left out of the engine.
func (e *engineRank) abort(t *engineTicket) {
	e.mu.Lock()
	e.aborts = append(e.aborts, t)
	e.mu.Unlock()
	e.kick()
}

func seconds(d time.Duration) float64 { return d.Seconds() }

// maxLag is how far behind its own timeline the loop may fall (a busy host waking it late)
// before it gives up the lost time instead of running steps back to back to catch up.
const maxLag = 50 * time.Millisecond

// run is the engine's loop: it ends when stop is closed. Steps follow each other on the
// engine's own timeline (each starts when the last one ended), so a late wake-up delays the
// tokens of one step without shifting every later step: the same absolute-deadline rule as
// the pacer's.
func (e *engineRank) run(p *pacer.Pacer) {
	defer close(e.done)
	var inbox, aborts, pending []*engineTicket
	var clock time.Duration // the engine's timeline: when the next step starts
	for {
		e.mu.Lock()
		inbox, e.inbox = e.inbox, inbox[:0]
		aborts, e.aborts = e.aborts, aborts[:0]
		e.mu.Unlock()
		now := pacer.Now()
		if e.eng.Idle() || now-clock > maxLag {
			clock = now
		}
		pending = append(pending, inbox...)
		clear(inbox)
		for _, t := range aborts {
			if i := slices.Index(pending, t); i >= 0 {
				pending = slices.Delete(pending, i, i+1)
				e.queued.Add(-1)
				continue
			}
			for i := range t.seqs {
				e.eng.Abort(&t.seqs[i])
			}
		}
		clear(aborts)
		// Requests whose API-server time has passed reach the engine, in arrival order.
		var nextReady time.Duration = never
		kept := pending[:0]
		for _, t := range pending {
			if t.ready > clock {
				nextReady = min(nextReady, t.ready)
				kept = append(kept, t)
				continue
			}
			for i := range t.seqs {
				if t.seqs[i].MaxOutput > 0 {
					// CheckFits passed at submit and the engine's size never changes.
					_ = e.eng.Add(&t.seqs[i], seconds(max(t.ready, 0)))
				}
			}
			e.queued.Add(-1)
		}
		clear(pending[len(kept):])
		pending = kept
		e.report()
		if e.eng.Idle() {
			if !e.sleep(nextReady) {
				return
			}
			continue
		}
		d := e.eng.Schedule(seconds(clock))
		if err := e.cost.Err(); err != nil && !e.costErr {
			// A module that failed priced the step at nothing (the engine takes 1 us); the
			// timing is wrong from here on, so say so loudly, once.
			e.costErr = true
			e.log.Error("engine model: the step-cost module failed; its failed steps take 1 us", "err", err)
		}
		if d <= 0 {
			// Waiting requests that cannot start yet (the async scheduler's one-step lag):
			// look again shortly.
			if !e.sleep(min(nextReady, now+time.Millisecond)) {
				return
			}
			continue
		}
		end := clock + time.Duration(d*float64(time.Second))
		p.WaitUntil(end)
		clock = end
		e.eng.Commit(seconds(end), d)
		e.iterationTokens.Observe(float64(e.eng.Batch().Tokens()))
		at := int64(pacer.Now())
		for _, s := range e.eng.Emitted() {
			t := s.Owner.(*engineTicket)
			pr := &t.prog[s.ID]
			if s.Generated == 1 {
				pr.first.Store(at)
				if s.ID == 0 {
					t.cached.Store(int32(s.CachedTokens))
				}
			}
			pr.last.Store(at)
			pr.produced.Store(int32(s.Generated))
			if e.loopWrites(t, s.Generated >= s.MaxOutput, time.Duration(at)) {
				continue
			}
			select {
			case t.wake <- struct{}{}:
			default:
			}
		}
		select {
		case <-e.stop:
			return
		default:
		}
	}
}

// sleep waits for a new request, an abort, or until (never: no deadline); false when the
// loop must stop.
func (e *engineRank) sleep(until time.Duration) bool {
	if until == never {
		select {
		case <-e.wake:
			return true
		case <-e.stop:
			return false
		}
	}
	timer := time.NewTimer(max(until-pacer.Now(), 0))
	defer timer.Stop()
	select {
	case <-e.wake:
	case <-timer.C:
	case <-e.stop:
		return false
	}
	return true
}

// report publishes the engine's state on the vLLM gauges.
func (e *engineRank) report() {
	e.running.Set(float64(e.eng.Running()))
	e.waiting.Set(float64(e.eng.Waiting()) + float64(e.queued.Load()))
	e.kvUsage.Set(e.eng.KVUsage())
	if n := float64(e.eng.Counters.Preemptions); n > e.reportedPreemptions {
		e.preemptions.Add(n - e.reportedPreemptions)
		e.reportedPreemptions = n
	}
}

// awaitEngine waits until the engine produces something for g's request. Before the first
// token (a queued request can wait long) it also watches the client's connection after
// watchAfter and reports false when the client left; once tokens flow, a departed client
// shows at the next write.
func (g *genCtx) awaitEngine() bool {
	t := g.ticket
	if anyProduced(t) {
		if g.directEligible() {
			return g.awaitDirect()
		}
		<-t.wake
		return true
	}
	select {
	case <-t.wake:
		return true
	default:
	}
	timer := time.NewTimer(watchAfter)
	select {
	case <-t.wake:
		timer.Stop()
		return true
	case <-timer.C:
	}
	gone := g.watch.goneCh()
	select {
	case <-t.wake:
		return true
	case <-gone:
		return false
	}
}

func anyProduced(t *engineTicket) bool {
	for i := range t.prog {
		if t.prog[i].produced.Load() > 0 {
			return true
		}
	}
	return false
}

// readEngine is Read for a request the engine model times: it sends what the engine has
// produced, waiting for the next step when nothing is new.
func (g *genCtx) readEngine(p []byte) (int, error) {
	for {
		now := pacer.Now()
		if _, ok := g.req.NextDeadline(); !ok {
			g.out.Finish(&g.req)
			break
		}
		if g.ticket.sync(&g.req, now) {
			g.req.Prompt.Cached = int(g.ticket.cached.Load())
			g.out.Emit(&g.req, now, g.mm.ITL)
			break
		}
		if !g.awaitEngine() {
			return 0, errClientGone
		}
	}
	return g.out.Copy(p), nil
}

// waitEngineDone waits for every token of a non-streamed request; false: the client left.
func (g *genCtx) waitEngineDone() bool {
	for !g.ticket.done() {
		if !g.awaitEngine() {
			return false
		}
	}
	g.req.Prompt.Cached = int(g.ticket.cached.Load())
	return true
}

// finishEngine records a non-streamed engine request's metrics from the times the engine
// produced its tokens (each sequence's gaps at their mean, the one figure it keeps).
func (g *genCtx) finishEngine(now time.Duration) {
	t := g.ticket
	for i := range g.req.Seqs {
		s := &g.req.Seqs[i]
		first, last := time.Duration(t.prog[i].first.Load()), time.Duration(t.prog[i].last.Load())
		if len(s.Tokens) == 0 {
			first, last = now, now
		}
		if n := len(s.Tokens) - 1; n > 0 {
			gap := (last - first) / time.Duration(n)
			for k := 0; k < n; k++ {
				g.mm.ITL.Observe(gap.Seconds())
			}
		}
		observe(g, s, first, last, now)
	}
	g.end()
}

// newEngineRank builds a rank's engine on the resolved settings and starts its loop.
func newEngineRank(cfg *config.Config, res *enginemodel.Resolved, cost EngineStepCost, rm *metrics.Set, p *pacer.Pacer, log *slog.Logger) (*engineRank, error) {
	eng, err := enginemodel.New(res.Engine, cost)
	if err != nil {
		return nil, err
	}
	e := &engineRank{eng: eng, model: cfg.Model,
		overhead: time.Duration(cost.RequestOverhead() * float64(time.Second)), cost: cost, log: log,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		maxQueued: int64(cfg.MaxWaitingQueueLength),
		running:   rm.Running.WithLabelValues(rm.BaseModel), waiting: rm.Waiting.WithLabelValues(rm.BaseModel),
		kvUsage: rm.KVUsage.WithLabelValues(rm.BaseModel), preemptions: rm.Preemptions.WithLabelValues(rm.BaseModel),
		iterationTokens: rm.IterationTokens.WithLabelValues(rm.BaseModel)}
	e.hashers.New = func() any { return kvblock.NewHasher(cfg.BlockSize, cfg.HashSeed) }
	go e.run(p)
	return e, nil
}

// close stops the loop (after the server drained) and waits for it.
func (e *engineRank) close() {
	select {
	case <-e.stop:
	default:
		close(e.stop)
	}
	<-e.done
}

// nativeStepCost is the native core as an EngineStepCost: it never fails.
type nativeStepCost struct{ *stepcost.Model }

func (nativeStepCost) Err() error { return nil }

// stepCoster is the engine's step-cost model: the native core, or a WASM step-cost module
// (--step-cost-module) configured with the same model, hardware, TP and coefficients.
func (s *Simulator) stepCoster(cfg *config.Config, res *enginemodel.Resolved) (EngineStepCost, error) {
	if cfg.StepCostModule == "" {
		return nativeStepCost{res.Cost}, nil
	}
	if s.resolveStepCost == nil {
		return nil, fmt.Errorf("--step-cost-module %q: this build loads no WASM modules", cfg.StepCostModule)
	}
	sc, err := s.resolveStepCost(cfg.StepCostModule, res.Cost.Config())
	if err != nil {
		return nil, fmt.Errorf("--step-cost-module %q: %w", cfg.StepCostModule, err)
	}
	return sc, nil
}
