package enginemodel

import (
	"errors"
	"fmt"

	"github.com/lensfn/lensfn/wasm-modules/stepcost"
)

// Config is the engine's server settings, vLLM's flags of the same names.
type Config struct {
	MaxNumSeqs          int
	MaxNumBatchedTokens int
	BlockSize           int
	// KVBlocks is the KV cache's size in blocks (vLLM's num_gpu_blocks).
	KVBlocks int
	// MaxModelLen bounds prompt + output tokens of one request; 0: no bound but the cache.
	MaxModelLen int
	// NoPrefixCaching turns the prefix cache off (vLLM's --no-enable-prefix-caching).
	NoPrefixCaching bool
	// NoAsyncScheduling turns off vLLM's async scheduling (on by default since v0.14), under
	// which the scheduler prepares step k+1 while step k runs: a request that arrives during a
	// step joins the step after the next one.
	NoAsyncScheduling bool
	// KernelWarmupSeconds is a stall the engine pays once per kernel configuration it compiles
	// on first use. vLLM's fused-MoE layers are Triton kernels tuned per batch size
	// (MoEConfigGrid): a step of M tokens runs the configuration of the grid point nearest M,
	// JIT-compiled the first time it runs. A fresh server has compiled those of the CUDA graphs
	// it captured (steps of up to KernelWarmupAboveTokens tokens) and of its start-up profiling
	// run (MaxNumBatchedTokens); each other grid point a step reaches costs one stall, the
	// first time. 0: no stall (a dense model, or a server already warmed).
	KernelWarmupSeconds     float64
	KernelWarmupAboveTokens int
}

// MaxKernelWarmupSeconds bounds the one-time kernel warm-up stall (vLLM's own start-up
// compiles take minutes; a stall past ten is a mistake, not a model).
const MaxKernelWarmupSeconds = 600

// MaxKVBlocks bounds the KV cache's blocks.
const MaxKVBlocks = 1 << 22

// Validate refuses settings vLLM would refuse.
func (c *Config) Validate() error {
	switch {
	case c.MaxNumSeqs < 1 || c.MaxNumSeqs > 1<<16:
		return fmt.Errorf("max_num_seqs must be between 1 and 65536, got %d", c.MaxNumSeqs)
	case c.MaxNumBatchedTokens < 1 || c.MaxNumBatchedTokens > 1<<22:
		return fmt.Errorf("max_num_batched_tokens must be between 1 and 4194304, got %d", c.MaxNumBatchedTokens)
	case !(c.KernelWarmupSeconds >= 0 && c.KernelWarmupSeconds <= MaxKernelWarmupSeconds):
		return fmt.Errorf("kernel_warmup_seconds must be between 0 and %d, got %v", MaxKernelWarmupSeconds, c.KernelWarmupSeconds)
	case c.KernelWarmupAboveTokens < 0:
		return fmt.Errorf("the kernel warm-up's token threshold must not be negative, got %d", c.KernelWarmupAboveTokens)
	case c.BlockSize < 1 || c.BlockSize > 1024:
		return fmt.Errorf("block_size must be between 1 and 1024, got %d", c.BlockSize)
	case c.KVBlocks < 1 || c.KVBlocks > MaxKVBlocks:
		// Each block costs the engine 21 bytes of bookkeeping: the bound keeps one engine under
		// 90 MB (a 1B model on an H200 needs about 270,000 blocks of 16 tokens).
		return fmt.Errorf("the KV cache must have between 1 and %d blocks, got %d (a larger --block-size holds more tokens per block)", MaxKVBlocks, c.KVBlocks)
	case c.MaxModelLen < 0:
		return fmt.Errorf("max_model_len must not be negative")
	}
	return nil
}

// StepCoster prices one step: *stepcost.Model natively, a step-cost WASM module through the
// host. It returns seconds.
type StepCoster interface {
	StepTime(b *stepcost.Batch) float64
}

// Seq states.
const (
	Waiting uint8 = iota
	Running
	Finished
	Aborted
)

// Seq is one request in the engine.
type Seq struct {
	ID           uint64
	PromptTokens int
	// BlockHashes are the chained hashes of the prompt's full blocks (PromptBlocks); they are
	// what the prefix cache matches.
	BlockHashes []uint64
	// MaxOutput is how many tokens the request generates (ignore_eos) or at most generates.
	MaxOutput int
	// Transferred is how many prompt tokens' KV arrive from elsewhere instead of being
	// prefilled here (a P/D decode instance: the prefill ran remotely).
	Transferred int
	// Owner is the driver's handle (the simulator's stream); the engine never reads it.
	Owner any

	State        uint8
	Computed     int // tokens whose KV is computed
	Generated    int // output tokens so far
	CachedTokens int // prefix-cache hit of the first admission
	Preemptions  int
	// Times on the engine's clock, in seconds: admitted (entered the waiting queue), first
	// scheduled, first and last token produced, finished.
	Admitted, Scheduled, FirstToken, LastToken, Finish float64

	blocks    []int32
	scheduled int // new tokens in the step being computed
	everRan   bool
}

func (s *Seq) numTokens() int { return s.PromptTokens + s.Generated }

// Counters are the engine's running totals, what vLLM's metrics count.
type Counters struct {
	Steps             int64   `json:"steps"`
	Preemptions       int64   `json:"preemptions"`
	PrefixQueryTokens int64   `json:"prefix_query_tokens"` // prompt tokens looked up in the prefix cache
	PrefixHitTokens   int64   `json:"prefix_hit_tokens"`
	PromptTokens      int64   `json:"prompt_tokens"` // prompt tokens computed (prefills, recomputation included)
	GenerationTokens  int64   `json:"generation_tokens"`
	Evictions         int64   `json:"evictions"`
	FinishedRequests  int64   `json:"finished_requests"`
	BusySeconds       float64 `json:"busy_seconds"`
	MaxRunning        int     `json:"max_running"`
	MaxWaiting        int     `json:"max_waiting"`
	BatchTokensSummed int64   `json:"batch_tokens_summed"` // the sum of each step's scheduled tokens (tokens per iteration)
	BatchSeqsSummed   int64   `json:"batch_seqs_summed"`
	// WarmupSeconds is the kernel warm-up stalls the engine paid (Config.KernelWarmupSeconds per
	// configuration compiled on first use).
	WarmupSeconds float64 `json:"warmup_seconds,omitempty"`
}

// Add sums o into c (several replicas' counters); maxima stay maxima.
func (c *Counters) Add(o Counters) {
	c.Steps += o.Steps
	c.Preemptions += o.Preemptions
	c.PrefixQueryTokens += o.PrefixQueryTokens
	c.PrefixHitTokens += o.PrefixHitTokens
	c.PromptTokens += o.PromptTokens
	c.GenerationTokens += o.GenerationTokens
	c.Evictions += o.Evictions
	c.FinishedRequests += o.FinishedRequests
	c.BusySeconds += o.BusySeconds
	c.MaxRunning = max(c.MaxRunning, o.MaxRunning)
	c.MaxWaiting = max(c.MaxWaiting, o.MaxWaiting)
	c.BatchTokensSummed += o.BatchTokensSummed
	c.BatchSeqsSummed += o.BatchSeqsSummed
	c.WarmupSeconds += o.WarmupSeconds
}

// Engine is one vLLM engine (one data-parallel replica).
type Engine struct {
	cfg  Config
	cost StepCoster
	kv   *kvCache

	front   []*Seq // preempted requests, last preempted first (a stack in front of waiting)
	waiting []*Seq
	whead   int
	running []*Seq

	sched []*Seq
	batch stepcost.Batch
	// lastStart and lastEnd bound the last step; with async scheduling a step admits the
	// requests that arrived before the previous step started (the engine was busy) or before
	// now (it was idle).
	lastStart, lastEnd float64
	emitted            []*Seq
	finished           []*Seq
	preempt            bool
	// compiled has bit i set when MoEConfigGrid[i]'s kernels are compiled.
	compiled uint64
	hit      []int32 // scratch: the cached blocks of the request being admitted

	Counters Counters
}

// minStep is the least a scheduled step takes (one microsecond): a step-cost model that
// answers nothing usable must not stall the engine's clock.
const minStep = 1e-6

// ErrTooLong is vLLM's answer to a request the KV cache can never hold.
var ErrTooLong = errors.New("request too long for the KV cache")

// New builds an engine; cfg must validate.
func New(cfg Config, cost StepCoster) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cost == nil {
		return nil, errors.New("enginemodel: a step-cost model is required")
	}
	e := &Engine{cfg: cfg, cost: cost, kv: newKVCache(cfg.KVBlocks, cfg.BlockSize)}
	// Start-up compiles every configuration up to the largest captured graph's, and the
	// profiling run's (a forward pass of max_num_batched_tokens).
	for i := 0; i <= moeConfigIndex(max(cfg.KernelWarmupAboveTokens, 1)); i++ {
		e.compiled |= 1 << i
	}
	e.compiled |= 1 << moeConfigIndex(cfg.MaxNumBatchedTokens)
	return e, nil
}

// MoEConfigGrid is the batch sizes (tokens per step) vLLM's fused-MoE kernel configurations
// are tuned for, the keys of its configs/E=...,N=...,device_name=....json files; a step runs
// the configuration of the size nearest its token count (the smaller on a tie).
var MoEConfigGrid = [...]int{1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 256, 512, 1024, 1536, 2048, 3072, 4096}

// moeConfigIndex is the index in MoEConfigGrid of the configuration a step of tokens runs.
func moeConfigIndex(tokens int) int {
	best := 0
	for i, m := range MoEConfigGrid {
		if abs(m-tokens) < abs(MoEConfigGrid[best]-tokens) {
			best = i
		}
	}
	return best
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// Config returns the engine's settings.
func (e *Engine) Config() Config { return e.cfg }

// CheckFits reports, as vLLM does at admission, a request whose prompt and output can never
// fit in the KV cache or the model's context.
func (e *Engine) CheckFits(promptTokens, maxOutput int) error {
	total := promptTokens + maxOutput
	if e.cfg.MaxModelLen > 0 && total > e.cfg.MaxModelLen {
		//lint:ignore ST1005 vLLM's message, word for word: clients match on it
		return fmt.Errorf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			e.cfg.MaxModelLen, total, promptTokens, maxOutput)
	}
	if blocks := (total + e.cfg.BlockSize - 1) / e.cfg.BlockSize; blocks > e.kv.total() {
		return fmt.Errorf("%w: the prompt (%d tokens) and output (%d tokens) need %d KV blocks, but the cache has %d",
			ErrTooLong, promptTokens, maxOutput, blocks, e.kv.total())
	}
	return nil
}

// Add puts s at the end of the waiting queue at time now. A request that can never fit is
// refused (CheckFits).
func (e *Engine) Add(s *Seq, now float64) error {
	if err := e.CheckFits(s.PromptTokens, s.MaxOutput); err != nil {
		return err
	}
	s.State, s.Admitted = Waiting, now
	e.waiting = append(e.waiting, s)
	return nil
}

// Running and Waiting count the requests in each state.
func (e *Engine) Running() int { return len(e.running) }
func (e *Engine) Waiting() int { return len(e.front) + len(e.waiting) - e.whead }

// Idle reports whether no request is running or waiting.
func (e *Engine) Idle() bool { return len(e.running) == 0 && e.Waiting() == 0 }

// KVUsage is the share of KV blocks in use.
func (e *Engine) KVUsage() float64 { return e.kv.usage() }

// KVBlocksFree is the free (possibly cached) blocks.
func (e *Engine) KVBlocksFree() int { return e.kv.free }

func (e *Engine) peekWaiting() *Seq {
	if n := len(e.front); n > 0 {
		return e.front[n-1]
	}
	if e.whead < len(e.waiting) {
		return e.waiting[e.whead]
	}
	return nil
}

func (e *Engine) popWaiting() {
	if n := len(e.front); n > 0 {
		e.front = e.front[:n-1]
		return
	}
	e.waiting[e.whead] = nil
	e.whead++
	if e.whead > 1024 && e.whead*2 > len(e.waiting) {
		n := copy(e.waiting, e.waiting[e.whead:])
		clear(e.waiting[n:])
		e.waiting, e.whead = e.waiting[:n], 0
	}
}

// blocksFor is how many blocks tokens tokens occupy.
func (e *Engine) blocksFor(tokens int) int { return (tokens + e.cfg.BlockSize - 1) / e.cfg.BlockSize }

// grow gives s the blocks for `tokens` computed tokens, caching the prompt blocks that become
// full; it fails, changing nothing, when too few blocks are free.
func (e *Engine) grow(s *Seq, tokens int) bool {
	need := e.blocksFor(tokens) - len(s.blocks)
	if need > e.kv.free {
		return false
	}
	if need > 0 {
		s.blocks = e.kv.allocate(s.blocks, need)
	}
	e.cacheFull(s, tokens)
	return true
}

// cacheFull registers the prompt blocks of s that tokens computed tokens fill.
func (e *Engine) cacheFull(s *Seq, tokens int) {
	if e.cfg.NoPrefixCaching {
		return
	}
	full := min(tokens/e.cfg.BlockSize, len(s.BlockHashes), len(s.blocks))
	for i := s.Computed / e.cfg.BlockSize; i < full; i++ {
		e.kv.cache(s.blocks[i], s.BlockHashes[i])
	}
}

func (e *Engine) preemptLast() *Seq {
	n := len(e.running) - 1
	v := e.running[n]
	e.running[n] = nil
	e.running = e.running[:n]
	e.kv.release(v.blocks)
	v.blocks = v.blocks[:0]
	v.Computed, v.State, v.scheduled = 0, Waiting, 0
	v.Preemptions++
	e.Counters.Preemptions++
	e.front = append(e.front, v)
	e.preempt = true
	return v
}

func (e *Engine) add(s *Seq, newTokens int) {
	s.scheduled = newTokens
	e.sched = append(e.sched, s)
	b := &e.batch
	if newTokens == 1 && s.Computed >= s.PromptTokens {
		b.DecodeSeqs++
		b.DecodeContext += s.Computed + 1
	} else {
		b.PrefillSeqs++
		b.PrefillTokens += newTokens
		b.PrefillAttention += float64(newTokens) * (float64(s.Computed) + float64(newTokens+1)/2)
		b.PrefillContext += s.Computed
		e.Counters.PromptTokens += int64(newTokens)
	}
	if s.Computed+newTokens >= s.numTokens() {
		b.SampledSeqs++
	}
}

// Schedule picks the batch of the step starting at now as vLLM V1's scheduler does and
// returns its duration in seconds (0: nothing to run). Commit must follow before the next
// Schedule.
func (e *Engine) Schedule(now float64) float64 {
	cutoff := now
	if !e.cfg.NoAsyncScheduling && len(e.running) > 0 && e.lastEnd >= now {
		// Busy: this step was prepared while the last one ran, from what had arrived by then.
		cutoff = e.lastStart
	}
	e.sched = e.sched[:0]
	e.batch = stepcost.Batch{}
	e.preempt = false
	budget := e.cfg.MaxNumBatchedTokens
	for i := 0; i < len(e.running) && budget > 0; {
		s := e.running[i]
		n := min(s.numTokens()-s.Computed, budget)
		if n <= 0 {
			i++
			continue
		}
		ok := true
		// A decode within its last block needs no block and fills no prompt block.
		for s.Computed+n > len(s.blocks)*e.cfg.BlockSize || s.Computed < len(s.BlockHashes)*e.cfg.BlockSize {
			if e.grow(s, s.Computed+n) {
				break
			}
			if e.preemptLast() == s {
				ok = false
				break
			}
		}
		if !ok {
			break
		}
		e.add(s, n)
		budget -= n
		i++
	}
	if !e.preempt {
		for budget > 0 && len(e.running) < e.cfg.MaxNumSeqs {
			s := e.peekWaiting()
			if s == nil || s.Admitted > cutoff {
				break
			}
			hit := e.hit[:0]
			if s.Computed == 0 && !e.cfg.NoPrefixCaching {
				// vLLM recomputes at least the last token: hits stop a token short of the prompt.
				hit = e.kv.hits(hit, s.BlockHashes, (s.numTokens()-1)/e.cfg.BlockSize)
			}
			e.hit = hit
			cached := len(hit) * e.cfg.BlockSize
			if s.Computed == 0 && s.Transferred > cached {
				cached = min(s.Transferred, s.numTokens()-1)
			}
			n := min(s.numTokens()-cached, budget)
			if e.blocksFor(cached+n)-len(hit) > e.kv.freeAfterTouch(hit) {
				break
			}
			if s.blocks == nil {
				// Room for every block the request will hold, so it never grows its list.
				s.blocks = make([]int32, 0, e.blocksFor(s.PromptTokens+s.MaxOutput))
			}
			s.blocks = e.kv.touch(s.blocks, hit)
			s.Computed = cached
			e.grow(s, cached+n)
			if !s.everRan {
				s.CachedTokens = cached
				e.Counters.PrefixQueryTokens += int64(s.PromptTokens)
				e.Counters.PrefixHitTokens += int64(cached)
			}
			e.popWaiting()
			s.State = Running
			e.running = append(e.running, s)
			e.add(s, n)
			budget -= n
		}
	}
	if len(e.sched) == 0 {
		return 0
	}
	d := e.cost.StepTime(&e.batch)
	if !(d >= minStep) { // a failed or degenerate cost model (0, negative, NaN) still moves time on
		d = minStep
	}
	if t := e.batch.Tokens(); e.cfg.KernelWarmupSeconds > 0 && t > e.cfg.KernelWarmupAboveTokens {
		if bit := uint64(1) << moeConfigIndex(t); e.compiled&bit == 0 {
			e.compiled |= bit
			e.Counters.WarmupSeconds += e.cfg.KernelWarmupSeconds
			d += e.cfg.KernelWarmupSeconds
		}
	}
	e.lastStart, e.lastEnd = now, now+d
	return d
}

// Batch is the batch Schedule picked.
func (e *Engine) Batch() *stepcost.Batch { return &e.batch }

// Commit ends the scheduled step at time `at`: every scheduled request's new tokens are
// computed, those whose prompt is complete produce a token, and those with all their tokens
// finish and free their blocks. Emitted and Finished list what happened.
func (e *Engine) Commit(at, duration float64) {
	e.emitted, e.finished = e.emitted[:0], e.finished[:0]
	if len(e.sched) == 0 {
		return
	}
	c := &e.Counters
	c.Steps++
	c.BusySeconds += duration
	c.BatchTokensSummed += int64(e.batch.Tokens())
	c.BatchSeqsSummed += int64(len(e.sched))
	c.MaxRunning = max(c.MaxRunning, len(e.running))
	c.MaxWaiting = max(c.MaxWaiting, e.Waiting())
	finished := false
	for _, s := range e.sched {
		if !s.everRan {
			s.everRan, s.Scheduled = true, at-duration
		}
		s.Computed += s.scheduled
		s.scheduled = 0
		if s.Computed < s.numTokens() {
			continue // a prefill chunk: no token yet
		}
		s.Generated++
		c.GenerationTokens++
		if s.Generated == 1 {
			s.FirstToken = at
		}
		s.LastToken = at
		e.emitted = append(e.emitted, s)
		if s.Generated >= s.MaxOutput {
			s.State, s.Finish = Finished, at
			e.kv.release(s.blocks)
			s.blocks = s.blocks[:0]
			e.finished = append(e.finished, s)
			c.FinishedRequests++
			finished = true
		}
	}
	c.Evictions = e.kv.evictions
	if finished {
		kept := e.running[:0]
		for _, s := range e.running {
			if s.State == Running {
				kept = append(kept, s)
			}
		}
		clear(e.running[len(kept):])
		e.running = kept
	}
}

// Emitted lists the requests that produced a token in the last committed step.
func (e *Engine) Emitted() []*Seq { return e.emitted }

// Finished lists the requests that finished in the last committed step.
func (e *Engine) Finished() []*Seq { return e.finished }

// Abort removes s (a client that left, a timeout) wherever it is, freeing its blocks. It must
// not be called between Schedule and Commit.
func (e *Engine) Abort(s *Seq) {
	switch s.State {
	case Running:
		for i, r := range e.running {
			if r == s {
				e.running = append(e.running[:i], e.running[i+1:]...)
				break
			}
		}
	case Waiting:
		e.front = removeSeq(e.front, s)
		if i := indexSeq(e.waiting[e.whead:], s); i >= 0 {
			w := e.waiting[e.whead:]
			copy(w[i:], w[i+1:])
			e.waiting[len(e.waiting)-1] = nil
			e.waiting = e.waiting[:len(e.waiting)-1]
		}
	default:
		return
	}
	e.kv.release(s.blocks)
	s.blocks = s.blocks[:0]
	s.State = Aborted
}

func indexSeq(list []*Seq, s *Seq) int {
	for i, r := range list {
		if r == s {
			return i
		}
	}
	return -1
}

func removeSeq(list []*Seq, s *Seq) []*Seq {
	if i := indexSeq(list, s); i >= 0 {
		copy(list[i:], list[i+1:])
		list[len(list)-1] = nil
		return list[:len(list)-1]
	}
	return list
}
