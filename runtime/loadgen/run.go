package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lensfn/lensfn/runtime/secret"
	"github.com/lensfn/lensfn/wasm-modules/splitmix"
)

// Stats sums up a finished run.
type Stats struct {
	Scheduled  int64 // requests in the schedule
	Sent       int64 // requests put on the wire (each has a record)
	NotSent    int64 // never released; Unreleased says why
	Unreleased Unreleased
	Successful int64
	Failed     int64
	// Started is the wall-clock time of the schedule's zero; record times are relative to it.
	Started time.Time
	Elapsed time.Duration
}

// Unreleased counts the requests a run never sent, by why; the counts add up to Stats.NotSent.
type Unreleased struct {
	// AfterDuration: their own release time fell after Config.Duration.
	AfterDuration int64 `json:"after_duration"`
	// Waiting: they waited on a request that was never sent, so their release never came: the
	// later turns of a session cut off, subagents a cut-off turn would have spawned, and turns
	// that join a subagent which was cut off.
	Waiting int64 `json:"waiting_on_unsent"`
	// RunEnded: the run ended first (ctx cancelled, a sink error, or the grace period after
	// the duration ran out while they waited).
	RunEnded int64 `json:"run_ended"`
}

// Total is the number of requests never sent.
func (u Unreleased) Total() int64 { return u.AfterDuration + u.Waiting + u.RunEnded }

// Run sends every request of schedule at its release time and hands each request's Record to
// sink as it completes.
//
// Release times come from one absolute clock: a session's first turn at start + its arrival,
// a later turn at max(start + arrival, previous turn done), or previous turn done + its delay.
// A subagent (child) session is spawned by its parent: when the parent's SpawnAfterTurn
// completes (a failed turn completes too), or when the parent's first turn is released for
// -1; its first turn then counts its arrival or delay from the spawn. The parent's
// JoinBeforeTurn is not released until every child joined there has completed all its turns,
// and counts its own arrival or delay from the later of its previous turn's completion and the
// last of those children's; children with no join run in the background, though Run still
// waits for them. Config.SubagentTiming SubagentsAtRecordedOffsets places children and joins
// by the recorded timeline instead (see its doc). A parent turn that is never sent (cut off or
// stopped) never spawns its children, and a join whose child was cut off is never released:
// those requests count as not sent, and Stats.Unreleased says why.
//
// Requests with a RecordedMs get a Record.TimelineDriftMs: how far the replayed timeline of
// their session tree (a root session and its subagents) drifted from the recorded one.
//
// A delta-context session (ContextDeltas) sends turn k with turns 0..k in front of it; each
// session keeps its earlier turns' text only until its last turn is sent. Record.InputTokens
// counts the whole context then, and metadata turn_input_tokens the turn's own. A KeepReplies
// session also sends each earlier turn's reply after it (Request.KeepReplies, bounded by
// Config.MaxReplyBytes). Records carry metadata cached_tokens when the server reports
// usage.prompt_tokens_details.cached_tokens.
//
// Sends are never paced by sleeping per-request gaps, so lateness does not accumulate. A late
// dispatcher sends what is due at once. There is no cap on requests in flight (an open-loop
// replay must not be throttled by a slow endpoint); every goroutine Run starts has ended when
// it returns.
//
// With a Duration, requests released after it are not sent, and requests still in flight at
// Duration + GracePeriod are cancelled and recorded as failed. Cancelling ctx stops the run
// within a moment: nothing more is sent, requests in flight are cancelled and recorded as
// failed, and Run returns an error wrapping ctx's cause. A sink error also stops the run and
// is returned. Bad config or schedule entries (including subagent links to unknown sessions or
// turns, joins not after their spawn, and cycles of parents) are reported before anything is
// sent, naming the 1-based request.
func Run(ctx context.Context, cfg Config, schedule []Request, sink Sink) (Stats, error) {
	return RunSchedule(ctx, cfg, Requests(schedule), sink)
}

// RunSchedule is Run over any Schedule, such as a trace spooled to disk: the engine then holds
// a few bytes per request plus the requests in flight.
func RunSchedule(ctx context.Context, cfg Config, schedule Schedule, sink Sink) (Stats, error) {
	url, err := cfg.endpoint()
	if err != nil {
		return Stats{}, err
	}
	if sink == nil {
		return Stats{}, errors.New("loadgen: a sink is required")
	}
	p, err := newPlan(schedule, cfg.API)
	if err != nil {
		return Stats{}, fmt.Errorf("loadgen: %w", err)
	}
	if cfg.Concurrency > 0 && (p.next != nil || p.spawnAtStart != nil) {
		return Stats{}, errors.New("loadgen: a closed-loop run (Concurrency > 0) cannot send a schedule with sessions")
	}
	extra, err := decodeObject(cfg.ExtraBody)
	if err != nil {
		return Stats{}, fmt.Errorf("loadgen: extra body: %w", err)
	}
	e := &engine{
		cfg:         cfg,
		url:         url,
		plan:        p,
		extraBody:   extra,
		sink:        sink,
		progress:    cfg.Progress,
		runID:       cfg.RunID,
		spin:        cfg.SpinWindow,
		maxResponse: cfg.MaxResponseBytes,
		maxReply:    cfg.MaxReplyBytes,
	}
	if e.progress == nil {
		e.progress = &Progress{}
	}
	closeTransport, err := e.transport.open(cfg, url)
	if err != nil {
		return Stats{}, err
	}
	defer closeTransport()
	if e.runID == "" {
		e.runID = fmt.Sprintf("%08x", uint32(splitmix.Mix(cfg.Seed)))
	}
	if e.maxResponse == 0 {
		e.maxResponse = defaultMaxResponseBytes
	}
	if e.maxReply == 0 {
		e.maxReply = defaultMaxReplyBytes
	}
	cacheBytes := cfg.PromptCacheBytes
	if cacheBytes == 0 {
		cacheBytes = defaultPromptCacheBytes
	}
	e.synth = newSynth(cfg.Seed, cacheBytes)
	e.recordedOffsets = cfg.SubagentTiming == SubagentsAtRecordedOffsets
	e.cutoff = time.Duration(math.MaxInt64)
	if cfg.Duration > 0 {
		e.cutoff = cfg.Duration
	}
	e.progress.reset(int64(schedule.Len()))

	runCtx, cancelCtx := context.WithCancelCause(context.Background())
	// The time goes down before the context ends, so a request that sees the run ended can
	// tell whether that came before its own deadline (contextError).
	cancel := func(cause error) {
		e.endedAt.CompareAndSwap(0, time.Now().UnixNano())
		cancelCtx(cause)
	}
	defer cancel(nil)
	e.ctx, e.cancelRun = runCtx, cancel
	if e.lean != nil {
		// One hook for the run ends every request in flight when it stops, where a context
		// per request would cost a handful of allocations each.
		e.group = e.lean.Group(runCtx)
		defer e.group.Close()
	}
	stopWatch := context.AfterFunc(ctx, func() { cancel(fmt.Errorf("%w: %w", errRunStopped, context.Cause(ctx))) })
	defer stopWatch()

	ahead := cfg.PrepareAhead
	if ahead == 0 {
		ahead = defaultPrepareAhead
	}
	defer pacer.paceGC(cfg.GCHeadroomBytes)()
	e.start = time.Now()
	e.origin = e.start
	if !cfg.Origin.IsZero() && !cfg.Origin.After(e.start) {
		e.origin, e.shift = cfg.Origin, e.start.Sub(cfg.Origin)
	}
	if cfg.Duration > 0 {
		end := time.AfterFunc(cfg.Duration+cfg.GracePeriod, func() { cancel(errRunEnded) })
		defer end.Stop()
	}
	if cfg.Concurrency > 0 {
		e.closedLoop(cfg.Concurrency)
	} else {
		e.dispatch(ahead)
	}
	e.wg.Wait()

	snap := e.progress.Snapshot()
	st := Stats{
		Scheduled:  int64(schedule.Len()),
		Sent:       snap.Sent,
		NotSent:    int64(schedule.Len()) - snap.Sent,
		Unreleased: Unreleased{AfterDuration: e.afterDuration.Load(), Waiting: e.waiting.Load(), RunEnded: e.runEnded.Load()},
		Successful: snap.Successful,
		Failed:     snap.Failed,
		Started:    e.start,
		Elapsed:    time.Since(e.start),
	}
	e.progress.notSent.Store(st.NotSent)
	if err := e.sinkErr.Load(); err != nil {
		return st, fmt.Errorf("loadgen: writing a record: %w", *err)
	}
	if ctx.Err() != nil {
		return st, fmt.Errorf("loadgen: %w", context.Cause(ctx))
	}
	return st, nil
}

type engine struct {
	cfg         Config
	url         string
	plan        *plan
	extraBody   map[string]json.RawMessage
	synth       *synth
	transport   // the lean client or net/http's (client.go)
	runID       string
	spin        time.Duration
	maxResponse int64
	maxReply    int           // Config.MaxReplyBytes, resolved
	cutoff      time.Duration // releases after this offset are not sent
	// recordedOffsets: Config.SubagentTiming is SubagentsAtRecordedOffsets.
	recordedOffsets bool
	// Requests never sent, by reason (Unreleased).
	afterDuration, waiting, runEnded atomic.Int64

	ctx       context.Context
	cancelRun context.CancelCauseFunc
	endedAt   atomic.Int64 // when the run's context was ended (Unix ns), set just before it ends
	start     time.Time
	// origin is the records' zero (Config.Origin, else start); shift is start - origin.
	origin time.Time
	shift  time.Duration
	wg     sync.WaitGroup

	sinkMu   sync.Mutex
	sink     Sink
	sinkErr  atomic.Pointer[error]
	progress *Progress
}

// due is a prepared head of a root session: its release offset and body (and, for a
// delta-context session, the turn's own part of the context).
type due struct {
	index int
	req   *Request
	at    time.Duration
	body  []byte
	own   []byte
	err   error
}

// dispatch releases the heads of root sessions in order (child sessions are started by their
// parents). A helper goroutine builds bodies ahead of time so prompt synthesis never delays a
// send.
func (e *engine) dispatch(ahead int) {
	ready := make(chan due, ahead)
	heads := e.plan.headCount()
	cutAt := heads // the first head due after the duration; written before ready is closed
	go func() {
		defer close(ready)
		var at time.Duration
		for k := range heads {
			i := e.plan.head(k)
			r, err := e.load(i)
			var body, own []byte
			if err == nil {
				at = offset(headOffsetMs(r)) // a request that cannot be read fails at once
				body, own, err = e.body(r, i, nil)
			}
			if at > e.cutoff {
				cutAt = k // heads are in release order: every later one is due after it too
				return
			}
			select {
			case ready <- due{index: i, req: r, at: at, body: body, own: own, err: err}:
			case <-e.ctx.Done():
				return
			}
		}
	}()
	started := 0
	defer func() {
		for range ready { // let the builder see the end and exit
		}
		for k := started; k < heads; k++ {
			reason := &e.runEnded
			if k >= cutAt {
				reason = &e.afterDuration
			}
			e.abandon(e.plan.head(k), reason, true)
		}
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var w *waker // spinning, when asked for, replaces it
	if e.spin == 0 {
		if w = newWaker(); w != nil {
			defer w.close()
		}
	}
	for d := range ready {
		if !e.waitUntil(d.at, timer, w) {
			return
		}
		started++
		e.wg.Add(1)
		go e.session(sessionStart{index: d.index, prepared: &d})
	}
}

// closedLoop keeps exactly workers requests in flight: each worker sends the next request of
// the schedule as soon as its previous one completed, until none remain. A request's scheduled
// time is when its slot freed, so its drift is the time spent building its body.
func (e *engine) closedLoop(workers int) {
	var next atomic.Int64
	n := e.plan.n
	for range min(workers, n) {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			for e.ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				at := time.Since(e.start)
				if at > e.cutoff {
					return
				}
				r, err := e.load(i)
				var body []byte
				if err == nil {
					body, _, err = e.body(r, i, nil)
				}
				e.send(r, i, at, body, err, nil, nil)
			}
		}()
	}
}

// offset converts schedule milliseconds to a duration, saturating far-future values.
func offset(msec float64) time.Duration {
	if msec >= float64(math.MaxInt64/int64(time.Millisecond)) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(msec * float64(time.Millisecond))
}

// preciseWindow is the last stretch before a send time that the dispatcher's waker sleeps
// (without watching the run's context: a stop waits at most this long); a timer covers the
// rest, and it may wake a millisecond late.
const preciseWindow = 2 * time.Millisecond

// waitUntil blocks until start+at, sleeping, and spinning through the last SpinWindow when
// one is set; with a waker (the dispatcher's), the last preciseWindow is the waker's. False
// means the run was cancelled.
func (e *engine) waitUntil(at time.Duration, timer *time.Timer, w *waker) bool {
	target := e.start.Add(at)
	for {
		if e.ctx.Err() != nil {
			return false
		}
		rem := time.Until(target)
		if rem <= 0 {
			return true
		}
		if w != nil && rem <= preciseWindow {
			w.sleep(rem)
			continue
		}
		if rem > e.spin {
			sleep := rem
			switch {
			case w != nil:
				sleep -= preciseWindow
			case e.spin > 0:
				sleep -= e.spin
			}
			timer.Reset(sleep)
			select {
			case <-timer.C:
			case <-e.ctx.Done():
				return false
			}
			continue
		}
		runtime.Gosched()
	}
}

// sessionStart is where a session goroutine begins.
type sessionStart struct {
	index int
	// base is what the first turn's arrival or delay counts from: the run's start for a root
	// session, the spawn for a child.
	base time.Duration
	// prepared is a root head the dispatcher built and released.
	prepared *due
	// self is a child session's report to its parent; nil for a root session.
	self *subagentRun
	// spawnAt and spawnRecordedMs are the spawning turn's release and recorded position (a
	// child session under SubagentsAtRecordedOffsets).
	spawnAt         time.Duration
	spawnRecordedMs *float64
	// anchor is the session tree's timeline origin; nil for a root session, which sets it.
	anchor *timelineAnchor
}

// timelineAnchor pins a session tree's recorded timeline to the run's clock: the root session's
// first release and that turn's recorded position.
type timelineAnchor struct {
	at         time.Duration
	recordedMs float64
}

// subagentRun is a spawned child session's outcome; its parent reads it after done closes.
type subagentRun struct {
	done        chan struct{}
	completed   bool          // every turn was sent
	completedAt time.Duration // when its last turn completed
}

// session sends the turns of one session, each once it is released, spawning and joining the
// session's subagents on the way. A session that is cut off or stopped ends without sending
// its later turns, and so without spawning the children those would have spawned.
func (e *engine) session(s sessionStart) {
	defer e.wg.Done()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	var (
		completed bool
		lastDone  time.Duration
		spawned   map[int]*subagentRun // child head index -> its run
		earlier   history              // earlier turns of a delta-context session
	)
	if s.self != nil {
		defer func() {
			s.self.completed, s.self.completedAt = completed, lastDone
			close(s.self.done)
		}()
	}
	i, base := s.index, s.base
	var r *Request
	var loadErr error
	if s.prepared != nil {
		r = s.prepared.req
	} else {
		r, loadErr = e.load(i)
	}
	at := release(r, base)
	switch {
	case s.prepared != nil:
		at = s.prepared.at
	case s.self != nil && e.recordedOffsets && r.RecordedMs != nil && s.spawnRecordedMs != nil:
		// The recorded offset from the spawning turn, but never before that turn completed.
		at = max(base, addOffset(s.spawnAt, max(0, *r.RecordedMs-*s.spawnRecordedMs)))
	}
	anchor := s.anchor
	if anchor == nil && r.SessionID != "" && r.RecordedMs != nil {
		anchor = &timelineAnchor{at: at, recordedMs: *r.RecordedMs}
	}
	startSpawned := false // the children spawned when this session's first turn is released
	for first := true; ; first = false {
		if at > e.cutoff {
			e.abandon(i, &e.afterDuration, first && !startSpawned)
			return
		}
		if e.ctx.Err() != nil {
			e.abandon(i, &e.runEnded, first && !startSpawned)
			return
		}
		if first {
			for _, child := range e.plan.spawnAtStart[i] {
				spawned = e.spawn(spawned, child, sessionStart{base: at, spawnAt: at, spawnRecordedMs: r.RecordedMs, anchor: anchor})
			}
			startSpawned = true
		}
		released := first && s.prepared != nil // the dispatcher has waited for it
		if joins := e.plan.joinBefore[i]; len(joins) > 0 {
			latest, ok := e.join(spawned, joins)
			if !ok {
				reason := &e.waiting // a joined child was cut off
				if e.ctx.Err() != nil {
					reason = &e.runEnded
				}
				e.abandon(i, reason, false)
				return
			}
			later := at
			switch {
			case e.recordedOffsets:
				gap := 0.0
				if r.JoinDelayMs != nil {
					gap = *r.JoinDelayMs
				}
				later = addOffset(latest, gap)
			case latest > base:
				base = latest
				later = release(r, base)
			}
			if later > at {
				at, released = later, false
				if at > e.cutoff {
					e.abandon(i, &e.afterDuration, false)
					return
				}
			}
		}
		if !released {
			if timer == nil {
				timer = time.NewTimer(time.Hour)
			}
			if !e.waitUntil(at, timer, nil) {
				e.abandon(i, &e.runEnded, false)
				return
			}
		}
		var body, own []byte
		var err error
		if first && s.prepared != nil {
			body, own, err = s.prepared.body, s.prepared.own, s.prepared.err
			s.prepared = nil // the body is not needed past the send
		} else if err = loadErr; err == nil {
			body, own, err = e.body(r, i, &earlier)
		}
		done, answer := e.send(r, i, at, body, err, &earlier, anchor)
		for _, child := range e.plan.spawnAfter[i] {
			spawned = e.spawn(spawned, child, sessionStart{base: done, spawnAt: at, spawnRecordedMs: r.RecordedMs, anchor: anchor})
		}
		next := e.plan.nextTurn(i)
		if next < 0 {
			completed, lastDone = true, done
			return
		}
		switch {
		case r.KeepReplies && answer.ok:
			earlier.add(own, r.InputTokens, e.cfg.API)
			earlier.addReply(answer.reply, answer.tokens, e.cfg.API)
		case r.KeepReplies:
			// A failed turn leaves the history as it was: the next turn continues the last
			// answered exchange.
		case r.ContextMode == ContextDeltas:
			earlier.add(own, r.InputTokens, e.cfg.API)
		}
		i, base = next, done
		r, loadErr = e.load(i)
		at = release(r, base)
	}
}

// load reads request i from the schedule. On an error the request is empty and the error is
// recorded as the request's failure when its turn comes.
func (e *engine) load(i int) (*Request, error) {
	r := new(Request)
	if err := e.plan.schedule.Load(i, r); err != nil {
		*r = Request{}
		return r, fmt.Errorf("loading the request from the schedule: %w", err)
	}
	return r, nil
}

// abandon counts request i, which will never be sent, under reason, and under waiting what could
// only have followed it: the later turns of its session and the subagent sessions i and those
// turns would have spawned (withStartSpawns: also those spawned when i's session starts).
func (e *engine) abandon(i int, reason *atomic.Int64, withStartSpawns bool) {
	reason.Add(1)
	var n int64
	if withStartSpawns {
		for _, c := range e.plan.spawnAtStart[i] {
			n += e.plan.sessionSize(c)
		}
	}
	for j := i; j >= 0; j = e.plan.nextTurn(j) {
		if j != i {
			n++
		}
		for _, c := range e.plan.spawnAfter[j] {
			n += e.plan.sessionSize(c)
		}
	}
	e.waiting.Add(n)
}

// addOffset is at plus msec milliseconds, saturating.
func addOffset(at time.Duration, msec float64) time.Duration {
	d := offset(msec)
	if d > time.Duration(math.MaxInt64)-at {
		return time.Duration(math.MaxInt64)
	}
	return at + d
}

// release is when request r is released given what it counts from: its arrival if later
// than base, base plus its delay, or base itself.
func release(r *Request, base time.Duration) time.Duration {
	switch {
	case r.ArrivalMs != nil:
		return max(base, offset(*r.ArrivalMs))
	case r.DelayMs != nil:
		return addOffset(base, *r.DelayMs)
	}
	return base
}

// spawn starts child session head child; start gives its base (the spawn), the spawning turn's
// release and recorded position, and the tree's timeline anchor.
func (e *engine) spawn(spawned map[int]*subagentRun, child int, start sessionStart) map[int]*subagentRun {
	run := &subagentRun{done: make(chan struct{})}
	if spawned == nil {
		spawned = map[int]*subagentRun{}
	}
	spawned[child] = run
	start.index, start.self = child, run
	e.wg.Add(1)
	go e.session(start)
	return spawned
}

// join waits until every child in children has ended and returns when the last one completed.
// False means one was cut off or the run stopped: the joining turn is then never released.
func (e *engine) join(spawned map[int]*subagentRun, children []int) (time.Duration, bool) {
	var latest time.Duration
	for _, child := range children {
		run := spawned[child]
		if run == nil { // cannot happen: a child is spawned before the turn that joins it
			return 0, false
		}
		select {
		case <-run.done:
		case <-e.ctx.Done():
			return 0, false
		}
		if !run.completed {
			return 0, false
		}
		latest = max(latest, run.completedAt)
	}
	return latest, true
}

// answer is what a KeepReplies session keeps of a turn: its reply (already cut to the
// session's room) and output tokens; ok says the turn succeeded.
type answer struct {
	ok     bool
	reply  []byte
	tokens int
}

// send performs request i, released at offset at, emits its record, and returns the offset at
// which it completed and, for a KeepReplies turn, its answer. earlier (nil outside a session)
// holds the earlier turns sent with it; anchor, when set, is its session tree's timeline origin.
func (e *engine) send(r *Request, i int, at time.Duration, body []byte, buildErr error, earlier *history, anchor *timelineAnchor) (time.Duration, answer) {
	contextTokens := 0
	if earlier != nil {
		contextTokens = earlier.tokens
	}
	var sent time.Time
	var out outcome
	key := e.requestKey(i) // the X-Request-ID header and the record's x_request_id
	if buildErr != nil {
		sent = time.Now()
		e.progress.sent.Add(1)
		out = outcome{err: "building the request body: " + buildErr.Error(), completedAt: sent}
	} else {
		var deadline time.Time // zero: no per-request timeout
		if e.cfg.RequestTimeout > 0 {
			deadline = time.Now().Add(e.cfg.RequestTimeout)
		}
		out = e.exchange(deadline, r, key, body, &sent)
	}
	if sent.IsZero() { // the request could not even be built
		sent = out.completedAt
		e.progress.sent.Add(1)
	}
	rec := Record{
		RequestID:          int64(i) + 1,
		SessionID:          r.SessionID,
		Turn:               r.Turn,
		Successful:         out.err == "" && out.status >= 200 && out.status <= 299,
		ScheduledAtSeconds: (e.shift + at).Seconds(),
		StartedAtSeconds:   sent.Sub(e.origin).Seconds(),
		CompletedAtSeconds: out.completedAt.Sub(e.origin).Seconds(),
		LatencyMs:          ms(out.completedAt.Sub(sent)),
		InputTokens:        float64(r.InputTokens + contextTokens),
		Metadata:           e.metadata(r, key, at, &out),
	}
	if contextTokens > 0 {
		rec.Metadata["turn_input_tokens"] = r.InputTokens
	}
	// The record's optional numbers share one allocation, made when the first is set.
	var nums *recordNumbers
	numbers := func() *recordNumbers {
		if nums == nil {
			nums = new(recordNumbers)
		}
		return nums
	}
	if anchor != nil && r.RecordedMs != nil {
		d := ms(sent.Sub(e.start)-anchor.at) - (*r.RecordedMs - anchor.recordedMs)
		n := numbers()
		n.drift = math.Round(d*1e6) / 1e6 // whole nanoseconds
		rec.TimelineDriftMs = &n.drift
	}
	if out.responseSeen {
		n := numbers()
		n.status = out.status
		rec.StatusCode = &n.status
	}
	if out.err != "" {
		// Endpoints echo keys in error bodies; records, summaries and the API never show them.
		msg := secret.Redact(out.err, e.cfg.APIKey)
		rec.Error = &msg
	}
	if out.usage != nil && out.usage.PromptTokens != nil {
		rec.InputTokens = float64(*out.usage.PromptTokens)
	}
	switch {
	case out.usage != nil && out.usage.CompletionTokens != nil:
		rec.OutputTokens = float64(*out.usage.CompletionTokens)
	default:
		rec.OutputTokens = float64(out.chunks)
	}
	if cached := out.usage.cachedTokens(); cached != nil {
		rec.Metadata["cached_tokens"] = *cached
	}
	var kept answer
	if r.KeepReplies && rec.Successful && earlier != nil {
		reply, cut := earlier.clipReply(out.reply, e.maxReply)
		kept = answer{ok: true, reply: reply, tokens: int(rec.OutputTokens)}
		if cut || out.replyCut {
			rec.Metadata["reply_truncated"] = true
		}
	}
	if out.chunks > 0 {
		n := numbers()
		n.first = out.firstToken.Sub(e.origin).Seconds()
		n.ttft = ms(out.firstToken.Sub(sent))
		rec.FirstTokenAtSeconds, rec.TTFTMs = &n.first, &n.ttft
		if rec.OutputTokens >= 2 {
			n.tpot = ms(out.lastToken.Sub(out.firstToken)) / (rec.OutputTokens - 1)
			rec.TPOTMs = &n.tpot
		}
	}
	e.emit(rec)
	return out.completedAt.Sub(e.start), kept
}

// recordNumbers are the values a Record's optional number fields point to.
type recordNumbers struct {
	status                   int
	drift, first, ttft, tpot float64
}

// metadata is the request's own metadata plus what the engine knows about the exchange.
func (e *engine) metadata(r *Request, key string, at time.Duration, out *outcome) map[string]any {
	m := make(map[string]any, len(r.Metadata)+5)
	for k, v := range r.Metadata {
		m[k] = v
	}
	m["x_request_id"] = key
	if r.OutputTokens > 0 {
		m["requested_output_tokens"] = r.OutputTokens
	}
	switch {
	case out.usage != nil && out.usage.CompletionTokens != nil:
		m["output_tokens_source"] = "usage"
	case out.chunks > 0:
		m["output_tokens_source"] = "chunks"
	}
	if r.ArrivalMs != nil && offset(*r.ArrivalMs) != at {
		// A later turn waited for its previous turn: drift is measured from the release,
		// and the recorded arrival is kept here.
		m["recorded_at_seconds"] = *r.ArrivalMs / 1000
	}
	if e.cfg.InterTokenTimes && out.gaps != nil {
		m["inter_token_ms"] = out.gaps
	}
	return m
}

// emit hands a record to the sink (one at a time) and counts it.
func (e *engine) emit(rec Record) {
	e.sinkMu.Lock()
	err := e.sink.Record(rec)
	e.sinkMu.Unlock()
	e.progress.outputTok.Add(int64(rec.OutputTokens))
	if rec.Successful {
		e.progress.successful.Add(1)
	} else {
		e.progress.failed.Add(1)
	}
	if err != nil {
		e.sinkFailed(err)
	}
}

// sinkFailed stops the run on the sink's first error (its own function: taking err's address
// in emit would move it to the heap for every record).
func (e *engine) sinkFailed(err error) {
	if e.sinkErr.CompareAndSwap(nil, &err) {
		e.cancelRun(err)
	}
}

// requestKey is request i's X-Request-ID: the run id and the 1-based request id.
// Built in a stack buffer, so the string is its one allocation.
func (e *engine) requestKey(i int) string {
	var buf [64]byte
	b := append(append(buf[:0], e.runID...), '-')
	return string(strconv.AppendInt(b, int64(i)+1, 10))
}
