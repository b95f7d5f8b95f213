package loadgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"
)

// Request is one entry of a schedule: when to send (an arrival offset, or a delay after the
// previous turn of its session completes), what to send (a literal prompt or chat messages, or
// a prompt synthesised from hash ids), and how long the answer should be. The trace replayer
// converts its parsed trace records into these; the benchmark runner builds them from a workload.
type Request struct {
	// SessionID groups the turns of one conversation; empty means the request is its own
	// single-turn session.
	SessionID string
	// Turn is the 0-based position inside the session; turns are sent in this order.
	Turn int
	// ArrivalMs is the intended send time in ms after the run's start. A later turn with an
	// arrival is released at max(arrival, previous turn done). Nil for a delay-driven turn.
	ArrivalMs *float64
	// DelayMs is the wait after the previous turn of the session completes (nil unless
	// delay-driven). On a session's first turn it counts from the run's start, or from the
	// spawn for a subagent session. A later turn with neither an arrival nor a delay is
	// released as soon as the previous turn is done.
	DelayMs *float64
	// RecordedMs is where the request sits on the recorded timeline, in ms on the schedule's own
	// axis (that of ArrivalMs: after range and scale factor). Optional: with it, records carry
	// their timeline drift, and SubagentsAtRecordedOffsets places subagent sessions by it.
	RecordedMs *float64
	// JoinDelayMs, on a turn that joins subagents, is the recorded idle gap between the end of the
	// last of them and this turn (SubagentsAtRecordedOffsets; nil means 0).
	JoinDelayMs *float64
	// InputTokens is the prompt length to synthesise (ignored when Prompt or Messages is set).
	InputTokens int
	// OutputTokens is sent as max_tokens (and max_completion_tokens on chat); 0 sends no limit.
	OutputTokens int
	// HashIDs name BlockSize-token prompt blocks: equal ids give byte-identical text, so
	// requests sharing leading ids share a prompt prefix.
	HashIDs   []int64
	BlockSize int
	// TailKey names the synthesised words after the hash blocks (or the whole prompt without
	// them): requests with one TailKey get the same words, so a prompt can repeat whole, as
	// inference-perf's shared-prefix prompts do. 0 makes the words the request's own.
	TailKey uint64
	// SystemPromptTokens, on the chat API, sends the first SystemPromptTokens words of the
	// synthesised prompt (a shared-prefix group's system prompt, its leading hash blocks) as a
	// system message and the rest as the user message, as inference-perf's chat requests do.
	// On completions the prompt stays one text. Ignored when Prompt or Messages is set.
	SystemPromptTokens int
	// Prompt is a literal prompt sent instead of a synthesised one.
	Prompt *string
	// Messages is a literal JSON array of OpenAI chat messages (chat API only).
	Messages json.RawMessage
	// Tools is a JSON array of OpenAI tool definitions sent with the chat request.
	Tools json.RawMessage
	// Payload is a JSON object used as the base of the request body; the engine still sets
	// model, stream and stream_options, and Extra is merged over it.
	Payload json.RawMessage
	// Extra is a JSON object shallow-merged into the request body (its keys win over
	// Config.ExtraBody and the engine's own keys).
	Extra json.RawMessage
	// Metadata is copied into the request's Record (the replayer's recorded values, line
	// numbers, ...). It must be JSON-encodable.
	Metadata map[string]any
	// ContextMode says whether a later turn is sent alone (empty or ContextSelfContained) or
	// with the earlier turns of its session in front of it (ContextDeltas). Every turn of a
	// session must give the same mode.
	ContextMode ContextMode
	// KeepReplies, on a ContextDeltas session, also keeps the assistant's replies in the
	// session's history: turn k then sends turn 0's part, its reply, turn 1's part, its reply,
	// ... and its own part, as a chat client does (on the chat API each reply is an assistant
	// message; on completions its text follows the prompt it continued, verbatim). A turn that
	// fails leaves the history as it was (inference-perf's multi-turn sessions do the same), so
	// the next turn continues the last answered exchange. Config.MaxReplyBytes bounds what a
	// session keeps. Every turn of a session must agree.
	KeepReplies bool
	// Subagent makes the request's session a child of another session, spawned and joined
	// by the parent's turns. Any turn of the child session may carry it; those that do must
	// agree. Nil for an ordinary session.
	Subagent *SubagentLink
}

// ContextMode is how much of a session a turn sends (AIPerf's names).
type ContextMode string

const (
	// ContextSelfContained sends each turn alone: the row already holds the whole context
	// (WEKA, Bailian, Baseten, literal message histories, payloads). The empty mode means this.
	ContextSelfContained ContextMode = "message_array_with_responses"
	// ContextDeltas sends turn k with turns 0..k of its session in front of it, without the
	// responses: on the chat API each turn's messages in order (a synthesised or literal
	// prompt is one user message, a literal messages array is spliced in whole); on the
	// completions API the turns' prompts concatenated. A payload cannot be accumulated.
	ContextDeltas ContextMode = "deltas_without_responses"
)

// SubagentLink ties a child session to its parent (AIPerf's WEKA subagent semantics).
type SubagentLink struct {
	// ParentSessionID is the SessionID of the spawning session.
	ParentSessionID string
	// SpawnAfterTurn is the parent's turn whose completion spawns the child; -1 spawns it
	// when the parent's first turn is released. The child's first turn then counts its delay
	// (or waits for its arrival) from the spawn.
	SpawnAfterTurn int
	// JoinBeforeTurn is the parent's turn that is not released until the child has
	// completed all its turns (its delay then counts from the later of its previous turn's
	// completion and the last joined child's); -1 lets the child run in the background.
	JoinBeforeTurn int
}

// Schedule is where a run reads its requests. Run reads every request once, in order, to check
// the schedule and plan its sessions before anything is sent, and loads each request again just
// before building its body, so a schedule kept on disk costs the engine memory only for the
// requests in flight (see runtime/tracespool). Load must be safe for concurrent use and give the
// same request every time; r is the caller's to fill and keep.
type Schedule interface {
	Len() int
	Load(i int, r *Request) error
}

// Requests is a schedule held in memory.
type Requests []Request

// Len implements Schedule.
func (s Requests) Len() int { return len(s) }

// Load implements Schedule.
func (s Requests) Load(i int, r *Request) error {
	*r = s[i]
	return nil
}

// plan is a checked schedule reduced to what releasing it needs: the sessions' turn chains, the
// order root sessions start in, and the subagent tables. The requests themselves stay in the
// schedule. The common kind of schedule (no sessions, arrivals in index order: a Mooncake or
// BurstGPT trace) needs no tables at all, so planning a million requests costs nothing that
// grows with them; a schedule with sessions costs about 8 bytes per request.
type plan struct {
	schedule Schedule
	n        int
	// next[i] is the index of the turn after request i in its session, or -1. Nil when no
	// request has a session.
	next []int32
	// heads are the first turns of root sessions in release order (by release offset, then
	// index). Nil means every request is a head, released in index order.
	heads []int32
	// Subagent sessions, by request index: spawnAtStart[h] are the child heads spawned when
	// head h is released, spawnAfter[i] those spawned when turn i completes, joinBefore[i]
	// those turn i waits for. Nil maps when the schedule has no subagents.
	spawnAtStart, spawnAfter, joinBefore map[int][]int
}

// headCount is the number of root sessions; head(k) is the k-th to be released.
func (p *plan) headCount() int {
	if p.heads == nil {
		return p.n
	}
	return len(p.heads)
}

func (p *plan) head(k int) int {
	if p.heads == nil {
		return k
	}
	return int(p.heads[k])
}

// sessionSize is how many requests session head h stands for: its turns and, recursively, the
// subagent sessions they spawn.
func (p *plan) sessionSize(h int) int64 {
	var n int64
	for _, c := range p.spawnAtStart[h] {
		n += p.sessionSize(c)
	}
	for j := h; j >= 0; j = p.nextTurn(j) {
		n++
		for _, c := range p.spawnAfter[j] {
			n += p.sessionSize(c)
		}
	}
	return n
}

// nextTurn is the index of the turn after request i in its session, or -1.
func (p *plan) nextTurn(i int) int {
	if p.next == nil {
		return -1
	}
	return int(p.next[i])
}

// session is what planning keeps of one session id: its turns and the settings its turns
// must agree on, with the request that first gave each (for errors).
type session struct {
	id     string
	turns  []turnRef
	mode   ContextMode
	keep   bool // KeepReplies
	modeAt int
	link   *SubagentLink
	linkAt int
}

type turnRef struct{ index, turn int32 }

func finiteNonNegative(v *float64) bool {
	return v == nil || (!math.IsNaN(*v) && !math.IsInf(*v, 0) && *v >= 0)
}

// checkRequest checks one request on its own. Errors name the 1-based request id.
func checkRequest(r *Request, id int, api API) error {
	if !finiteNonNegative(r.ArrivalMs) {
		return fmt.Errorf("request %d: arrival_ms must be a finite number >= 0, got %v", id, *r.ArrivalMs)
	}
	if !finiteNonNegative(r.DelayMs) {
		return fmt.Errorf("request %d: delay_ms must be a finite number >= 0, got %v", id, *r.DelayMs)
	}
	if !finiteNonNegative(r.JoinDelayMs) {
		return fmt.Errorf("request %d: join_delay_ms must be a finite number >= 0, got %v", id, *r.JoinDelayMs)
	}
	if r.RecordedMs != nil && (math.IsNaN(*r.RecordedMs) || math.IsInf(*r.RecordedMs, 0)) {
		return fmt.Errorf("request %d: recorded_ms must be a finite number, got %v", id, *r.RecordedMs)
	}
	if r.ArrivalMs != nil && r.DelayMs != nil {
		return fmt.Errorf("request %d: has both an arrival and a delay; give one", id)
	}
	if r.Turn < 0 || r.Turn > math.MaxInt32 {
		return fmt.Errorf("request %d: turn must be >= 0 (and fit 32 bits), got %d", id, r.Turn)
	}
	if r.InputTokens < 0 || r.OutputTokens < 0 {
		return fmt.Errorf("request %d: token counts must be >= 0 (input %d, output %d)", id, r.InputTokens, r.OutputTokens)
	}
	if r.SystemPromptTokens < 0 || (r.InputTokens > 0 && r.SystemPromptTokens > r.InputTokens) {
		return fmt.Errorf("request %d: system prompt tokens must be between 0 and the input tokens (%d), got %d", id, r.InputTokens, r.SystemPromptTokens)
	}
	if len(r.HashIDs) > 0 && r.BlockSize <= 0 && r.Prompt == nil && len(r.Messages) == 0 {
		return fmt.Errorf("request %d: hash ids need a block size > 0", id)
	}
	if len(r.Messages) > 0 {
		if api != APIChat {
			return fmt.Errorf("request %d: chat messages cannot be sent to the completions API", id)
		}
		if err := expectJSON(r.Messages, '['); err != nil {
			return fmt.Errorf("request %d: messages: %w", id, err)
		}
	}
	if len(r.Tools) > 0 {
		if api != APIChat {
			return fmt.Errorf("request %d: tools cannot be sent to the completions API", id)
		}
		if err := expectJSON(r.Tools, '['); err != nil {
			return fmt.Errorf("request %d: tools: %w", id, err)
		}
	}
	switch r.ContextMode {
	case "", ContextSelfContained:
	case ContextDeltas:
		if len(r.Payload) > 0 {
			return fmt.Errorf("request %d: a payload is sent verbatim, so it cannot carry %s context", id, ContextDeltas)
		}
	default:
		return fmt.Errorf("request %d: context mode must be %q or %q, got %q", id, ContextSelfContained, ContextDeltas, r.ContextMode)
	}
	if r.KeepReplies && r.ContextMode != ContextDeltas {
		return fmt.Errorf("request %d: keeping replies needs context mode %q", id, ContextDeltas)
	}
	if r.Subagent != nil && r.SessionID == "" {
		return fmt.Errorf("request %d: a subagent link needs a session id", id)
	}
	if _, err := decodeObject(r.Extra); err != nil {
		return fmt.Errorf("request %d: extra: %w", id, err)
	}
	if _, err := decodeObject(r.Payload); err != nil {
		return fmt.Errorf("request %d: payload: %w", id, err)
	}
	return nil
}

// newPlan checks every request in one pass over the schedule; a schedule with sessions, or
// with arrivals out of index order, takes a second pass that links the sessions and orders the
// heads. Errors name the 1-based request id.
func newPlan(schedule Schedule, api API) (*plan, error) {
	n := schedule.Len()
	if n > math.MaxInt32 {
		return nil, fmt.Errorf("a schedule holds at most %d requests, got %d", math.MaxInt32, n)
	}
	p := &plan{schedule: schedule, n: n}
	var r Request
	inOrder, sessions, last := true, false, 0.0
	for i := 0; i < n; i++ {
		if err := schedule.Load(i, &r); err != nil {
			return nil, fmt.Errorf("request %d: %w", i+1, err)
		}
		if err := checkRequest(&r, i+1, api); err != nil {
			return nil, err
		}
		if r.SessionID != "" {
			sessions = true
			continue
		}
		at := headOffsetMs(&r)
		inOrder = inOrder && at >= last
		last = at
	}
	if sessions {
		return p, p.linkSessions()
	}
	if !inOrder {
		return p, p.orderHeads(func(yield func(index int) bool) {
			for i := 0; i < n && yield(i); i++ {
			}
		})
	}
	return p, nil
}

// linkSessions chains the turns of every session, links subagents and orders the heads of
// root sessions.
func (p *plan) linkSessions() error {
	p.next = make([]int32, p.n)
	sessions := map[string]*session{}
	var order []*session // by first appearance, so errors are reproducible
	var roots []int      // requests without a session
	var r Request
	for i := 0; i < p.n; i++ {
		if err := p.schedule.Load(i, &r); err != nil {
			return fmt.Errorf("request %d: %w", i+1, err)
		}
		p.next[i] = -1
		if r.SessionID == "" {
			roots = append(roots, i)
			continue
		}
		s := sessions[r.SessionID]
		if s == nil {
			s = &session{id: r.SessionID, mode: r.ContextMode, keep: r.KeepReplies, modeAt: i}
			if s.mode == "" {
				s.mode = ContextSelfContained
			}
			sessions[r.SessionID] = s
			order = append(order, s)
		}
		if err := s.add(&r, i); err != nil {
			return err
		}
	}
	for _, s := range order {
		turns := s.turns
		slices.SortStableFunc(turns, func(a, b turnRef) int { return int(a.turn) - int(b.turn) })
		for k := 1; k < len(turns); k++ {
			if turns[k].turn == turns[k-1].turn {
				return fmt.Errorf("request %d: session %q has turn %d twice (also request %d)",
					turns[k].index+1, s.id, turns[k].turn, turns[k-1].index+1)
			}
			p.next[turns[k-1].index] = turns[k].index
		}
	}
	children, err := p.linkSubagents(order, sessions)
	if err != nil {
		return err
	}
	return p.orderHeads(func(yield func(index int) bool) {
		for _, i := range roots {
			if !yield(i) {
				return
			}
		}
		for _, s := range order {
			if first := int(s.turns[0].index); !children[first] && !yield(first) {
				return
			}
		}
	})
}

// orderHeads sorts the given heads by release offset, then index, into p.heads.
func (p *plan) orderHeads(heads iter.Seq[int]) error {
	type timed struct {
		index int32
		atMs  float64
	}
	var all []timed
	var r Request
	var err error
	heads(func(i int) bool {
		if err = p.schedule.Load(i, &r); err != nil {
			err = fmt.Errorf("request %d: %w", i+1, err)
			return false
		}
		all = append(all, timed{int32(i), headOffsetMs(&r)})
		return true
	})
	if err != nil {
		return err
	}
	slices.SortStableFunc(all, func(a, b timed) int {
		switch {
		case a.atMs < b.atMs:
			return -1
		case a.atMs > b.atMs:
			return 1
		}
		return int(a.index) - int(b.index)
	})
	p.heads = make([]int32, len(all))
	for k, h := range all {
		p.heads[k] = h.index
	}
	return nil
}

// headOffsetMs is when a root session's first turn is released: its arrival, or its delay
// after the run's start.
func headOffsetMs(r *Request) float64 {
	switch {
	case r.ArrivalMs != nil:
		return *r.ArrivalMs
	case r.DelayMs != nil:
		return *r.DelayMs
	}
	return 0
}

// add records request i as a turn of s and checks that it agrees with the session's earlier
// turns on the context mode and the subagent link.
func (s *session) add(r *Request, i int) error {
	s.turns = append(s.turns, turnRef{index: int32(i), turn: int32(r.Turn)})
	m := r.ContextMode
	if m == "" {
		m = ContextSelfContained
	}
	if m != s.mode {
		return fmt.Errorf("request %d: session %q mixes context modes (%s here, %s on request %d)", i+1, s.id, m, s.mode, s.modeAt+1)
	}
	if r.KeepReplies != s.keep {
		return fmt.Errorf("request %d: session %q keeps replies on some turns only (%t here, %t on request %d)", i+1, s.id, r.KeepReplies, s.keep, s.modeAt+1)
	}
	switch {
	case r.Subagent == nil:
	case s.link == nil:
		link := *r.Subagent
		s.link, s.linkAt = &link, i
	case *r.Subagent != *s.link:
		return fmt.Errorf("request %d: session %q has a subagent link %+v that differs from request %d's %+v", i+1, s.id, *r.Subagent, s.linkAt+1, *s.link)
	}
	return nil
}

// linkSubagents validates the subagent links and fills the spawn and join tables. It returns
// the heads of child sessions, which the dispatcher does not release (their parents do).
func (p *plan) linkSubagents(order []*session, sessions map[string]*session) (map[int]bool, error) {
	linked := false
	for _, s := range order {
		linked = linked || s.link != nil
	}
	if !linked {
		return nil, nil
	}
	// turnAt finds the request of session s with turn number turn.
	turnAt := func(s *session, turn int) (int, bool) {
		k, found := slices.BinarySearchFunc(s.turns, turn, func(t turnRef, turn int) int { return int(t.turn) - turn })
		if found {
			return int(s.turns[k].index), true
		}
		return 0, false
	}
	children := map[int]bool{}
	p.spawnAtStart, p.spawnAfter, p.joinBefore = map[int][]int{}, map[int][]int{}, map[int][]int{}
	for _, s := range order {
		l := s.link
		if l == nil {
			continue
		}
		id := s.linkAt + 1
		parent := sessions[l.ParentSessionID]
		switch {
		case l.ParentSessionID == s.id:
			return nil, fmt.Errorf("request %d: subagent session %q names itself as its parent", id, s.id)
		case parent == nil:
			return nil, fmt.Errorf("request %d: subagent session %q: parent session %q is not in the schedule", id, s.id, l.ParentSessionID)
		case l.SpawnAfterTurn < -1 || l.JoinBeforeTurn < -1:
			return nil, fmt.Errorf("request %d: subagent session %q: spawn and join turns must be >= -1, got %d and %d", id, s.id, l.SpawnAfterTurn, l.JoinBeforeTurn)
		case l.JoinBeforeTurn != -1 && l.JoinBeforeTurn <= l.SpawnAfterTurn:
			return nil, fmt.Errorf("request %d: subagent session %q joins before parent turn %d, which is not after its spawn turn %d", id, s.id, l.JoinBeforeTurn, l.SpawnAfterTurn)
		}
		head := int(s.turns[0].index)
		children[head] = true
		first, last := parent.turns[0], parent.turns[len(parent.turns)-1]
		if l.SpawnAfterTurn == -1 {
			p.spawnAtStart[int(first.index)] = append(p.spawnAtStart[int(first.index)], head)
		} else if at, ok := turnAt(parent, l.SpawnAfterTurn); ok {
			p.spawnAfter[at] = append(p.spawnAfter[at], head)
		} else {
			return nil, fmt.Errorf("request %d: subagent session %q: spawn turn %d is not a turn of parent session %q (turns %d..%d)",
				id, s.id, l.SpawnAfterTurn, l.ParentSessionID, first.turn, last.turn)
		}
		if l.JoinBeforeTurn == -1 {
			continue
		}
		at, ok := turnAt(parent, l.JoinBeforeTurn)
		if !ok {
			return nil, fmt.Errorf("request %d: subagent session %q: join turn %d is not a turn of parent session %q (turns %d..%d)",
				id, s.id, l.JoinBeforeTurn, l.ParentSessionID, first.turn, last.turn)
		}
		p.joinBefore[at] = append(p.joinBefore[at], head)
	}
	// A cycle of parents would leave every session in it waiting for another to spawn it.
	const (
		unseen = iota
		visiting
		done
	)
	state := map[string]int{}
	for _, s := range order {
		var path []string
		cur := s.id
		for sessions[cur] != nil && sessions[cur].link != nil && state[cur] != done {
			if state[cur] == visiting {
				k := slices.Index(path, cur)
				return nil, fmt.Errorf("request %d: subagent sessions form a cycle: %s -> %s", sessions[cur].linkAt+1, strings.Join(path[k:], " -> "), cur)
			}
			state[cur] = visiting
			path = append(path, cur)
			cur = sessions[cur].link.ParentSessionID
		}
		for _, id := range path {
			state[id] = done
		}
	}
	return children, nil
}

func expectJSON(raw json.RawMessage, open byte) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("not valid JSON: %w", err)
	}
	for _, c := range raw {
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			continue
		}
		if c != open {
			if open == '[' {
				return fmt.Errorf("must be a JSON array")
			}
			return fmt.Errorf("must be a JSON object")
		}
		return nil
	}
	return fmt.Errorf("is empty")
}

// decodeObject decodes an optional JSON object into its top-level keys.
func decodeObject(raw json.RawMessage) (map[string]json.RawMessage, error) {
	if len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	if err := expectJSON(raw, '{'); err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	return m, nil
}
