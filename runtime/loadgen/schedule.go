package loadgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
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
	// InputTokens is the prompt length to synthesise (ignored when Prompt or Messages is set).
	InputTokens int
	// OutputTokens is sent as max_tokens (and max_completion_tokens on chat); 0 sends no limit.
	OutputTokens int
	// HashIDs name BlockSize-token prompt blocks: equal ids give byte-identical text, so
	// requests sharing leading ids share a prompt prefix.
	HashIDs   []int64
	BlockSize int
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

// plan is a validated schedule: the sessions' turn chains and the order heads are released in.
type plan struct {
	requests []Request
	// next[i] is the index of the turn after request i in its session, or -1.
	next []int
	// heads are the first turns of every session, sorted by release offset then index.
	heads []int
	// headAt[i] is the release offset (ms) of head i.
	headAtMs []float64
	// extras[i] is request i's Extra decoded (nil when absent); payloads likewise.
	extras   []map[string]json.RawMessage
	payloads []map[string]json.RawMessage
	// Subagent sessions, by request index: spawnAtStart[h] are the child heads spawned when
	// head h is released, spawnAfter[i] those spawned when turn i completes, joinBefore[i]
	// those turn i waits for. Nil maps when the schedule has no subagents.
	spawnAtStart, spawnAfter, joinBefore map[int][]int
}

func finiteNonNegative(v *float64) bool {
	return v == nil || (!math.IsNaN(*v) && !math.IsInf(*v, 0) && *v >= 0)
}

// newPlan checks every request and links sessions. Errors name the 1-based request id.
func newPlan(schedule []Request, api API) (*plan, error) {
	p := &plan{
		requests: schedule,
		next:     make([]int, len(schedule)),
		extras:   make([]map[string]json.RawMessage, len(schedule)),
		payloads: make([]map[string]json.RawMessage, len(schedule)),
	}
	bySession := map[string][]int{}
	var sessionOrder []string // session ids by first appearance, so errors are reproducible
	for i := range schedule {
		r := &schedule[i]
		id := i + 1
		if !finiteNonNegative(r.ArrivalMs) {
			return nil, fmt.Errorf("request %d: arrival_ms must be a finite number >= 0, got %v", id, *r.ArrivalMs)
		}
		if !finiteNonNegative(r.DelayMs) {
			return nil, fmt.Errorf("request %d: delay_ms must be a finite number >= 0, got %v", id, *r.DelayMs)
		}
		if r.ArrivalMs != nil && r.DelayMs != nil {
			return nil, fmt.Errorf("request %d: has both an arrival and a delay; give one", id)
		}
		if r.Turn < 0 {
			return nil, fmt.Errorf("request %d: turn must be >= 0, got %d", id, r.Turn)
		}
		if r.InputTokens < 0 || r.OutputTokens < 0 {
			return nil, fmt.Errorf("request %d: token counts must be >= 0 (input %d, output %d)", id, r.InputTokens, r.OutputTokens)
		}
		if len(r.HashIDs) > 0 && r.BlockSize <= 0 && r.Prompt == nil && len(r.Messages) == 0 {
			return nil, fmt.Errorf("request %d: hash ids need a block size > 0", id)
		}
		if len(r.Messages) > 0 {
			if api != APIChat {
				return nil, fmt.Errorf("request %d: chat messages cannot be sent to the completions API", id)
			}
			if err := expectJSON(r.Messages, '['); err != nil {
				return nil, fmt.Errorf("request %d: messages: %w", id, err)
			}
		}
		if len(r.Tools) > 0 {
			if api != APIChat {
				return nil, fmt.Errorf("request %d: tools cannot be sent to the completions API", id)
			}
			if err := expectJSON(r.Tools, '['); err != nil {
				return nil, fmt.Errorf("request %d: tools: %w", id, err)
			}
		}
		switch r.ContextMode {
		case "", ContextSelfContained:
		case ContextDeltas:
			if len(r.Payload) > 0 {
				return nil, fmt.Errorf("request %d: a payload is sent verbatim, so it cannot carry %s context", id, ContextDeltas)
			}
		default:
			return nil, fmt.Errorf("request %d: context mode must be %q or %q, got %q", id, ContextSelfContained, ContextDeltas, r.ContextMode)
		}
		if r.Subagent != nil && r.SessionID == "" {
			return nil, fmt.Errorf("request %d: a subagent link needs a session id", id)
		}
		var err error
		if p.extras[i], err = decodeObject(r.Extra); err != nil {
			return nil, fmt.Errorf("request %d: extra: %w", id, err)
		}
		if p.payloads[i], err = decodeObject(r.Payload); err != nil {
			return nil, fmt.Errorf("request %d: payload: %w", id, err)
		}
		p.next[i] = -1
		if r.SessionID == "" {
			p.heads = append(p.heads, i)
			continue
		}
		if len(bySession[r.SessionID]) == 0 {
			sessionOrder = append(sessionOrder, r.SessionID)
		}
		bySession[r.SessionID] = append(bySession[r.SessionID], i)
	}
	for _, sid := range sessionOrder {
		turns := bySession[sid]
		sort.SliceStable(turns, func(a, b int) bool { return schedule[turns[a]].Turn < schedule[turns[b]].Turn })
		for k := 1; k < len(turns); k++ {
			if schedule[turns[k]].Turn == schedule[turns[k-1]].Turn {
				return nil, fmt.Errorf("request %d: session %q has turn %d twice (also request %d)",
					turns[k]+1, sid, schedule[turns[k]].Turn, turns[k-1]+1)
			}
			p.next[turns[k-1]] = turns[k]
		}
		if err := sameSessionSettings(schedule, sid, turns); err != nil {
			return nil, err
		}
	}
	children, err := p.linkSubagents(sessionOrder, bySession)
	if err != nil {
		return nil, err
	}
	for _, sid := range sessionOrder {
		if head := bySession[sid][0]; !children[head] {
			p.heads = append(p.heads, head)
		}
	}
	p.headAtMs = make([]float64, len(schedule))
	for _, i := range p.heads {
		r := &schedule[i]
		switch {
		case r.ArrivalMs != nil:
			p.headAtMs[i] = *r.ArrivalMs
		case r.DelayMs != nil:
			p.headAtMs[i] = *r.DelayMs
		}
	}
	sort.SliceStable(p.heads, func(a, b int) bool {
		ia, ib := p.heads[a], p.heads[b]
		if p.headAtMs[ia] != p.headAtMs[ib] {
			return p.headAtMs[ia] < p.headAtMs[ib]
		}
		return ia < ib
	})
	return p, nil
}

// sameSessionSettings checks that the turns of session sid agree on their context mode and
// subagent link.
func sameSessionSettings(schedule []Request, sid string, turns []int) error {
	first := &schedule[turns[0]]
	mode := first.ContextMode
	if mode == "" {
		mode = ContextSelfContained
	}
	var link *SubagentLink
	linkAt := 0
	for _, i := range turns {
		r := &schedule[i]
		m := r.ContextMode
		if m == "" {
			m = ContextSelfContained
		}
		if m != mode {
			return fmt.Errorf("request %d: session %q mixes context modes (%s here, %s on request %d)", i+1, sid, m, mode, turns[0]+1)
		}
		if r.Subagent == nil {
			continue
		}
		if link == nil {
			link, linkAt = r.Subagent, i
		} else if *r.Subagent != *link {
			return fmt.Errorf("request %d: session %q has a subagent link %+v that differs from request %d's %+v", i+1, sid, *r.Subagent, linkAt+1, *link)
		}
	}
	return nil
}

// linkSubagents validates the subagent links and fills the spawn and join tables. It returns
// the heads of child sessions, which the dispatcher does not release (their parents do).
func (p *plan) linkSubagents(sessionOrder []string, bySession map[string][]int) (map[int]bool, error) {
	schedule := p.requests
	links := map[string]*SubagentLink{}
	linkAt := map[string]int{} // the first request carrying the session's link, for errors
	for _, sid := range sessionOrder {
		for _, i := range bySession[sid] {
			if l := schedule[i].Subagent; l != nil {
				links[sid], linkAt[sid] = l, i
				break
			}
		}
	}
	if len(links) == 0 {
		return nil, nil
	}
	// turnAt finds the request of session sid with turn number turn.
	turnAt := func(sid string, turn int) (int, bool) {
		turns := bySession[sid]
		k := sort.Search(len(turns), func(k int) bool { return schedule[turns[k]].Turn >= turn })
		if k < len(turns) && schedule[turns[k]].Turn == turn {
			return turns[k], true
		}
		return 0, false
	}
	children := map[int]bool{}
	p.spawnAtStart, p.spawnAfter, p.joinBefore = map[int][]int{}, map[int][]int{}, map[int][]int{}
	for _, sid := range sessionOrder {
		l := links[sid]
		if l == nil {
			continue
		}
		id := linkAt[sid] + 1
		parent := bySession[l.ParentSessionID]
		switch {
		case l.ParentSessionID == sid:
			return nil, fmt.Errorf("request %d: subagent session %q names itself as its parent", id, sid)
		case len(parent) == 0:
			return nil, fmt.Errorf("request %d: subagent session %q: parent session %q is not in the schedule", id, sid, l.ParentSessionID)
		case l.SpawnAfterTurn < -1 || l.JoinBeforeTurn < -1:
			return nil, fmt.Errorf("request %d: subagent session %q: spawn and join turns must be >= -1, got %d and %d", id, sid, l.SpawnAfterTurn, l.JoinBeforeTurn)
		case l.JoinBeforeTurn != -1 && l.JoinBeforeTurn <= l.SpawnAfterTurn:
			return nil, fmt.Errorf("request %d: subagent session %q joins before parent turn %d, which is not after its spawn turn %d", id, sid, l.JoinBeforeTurn, l.SpawnAfterTurn)
		}
		head := bySession[sid][0]
		children[head] = true
		if l.SpawnAfterTurn == -1 {
			p.spawnAtStart[parent[0]] = append(p.spawnAtStart[parent[0]], head)
		} else if at, ok := turnAt(l.ParentSessionID, l.SpawnAfterTurn); ok {
			p.spawnAfter[at] = append(p.spawnAfter[at], head)
		} else {
			return nil, fmt.Errorf("request %d: subagent session %q: spawn turn %d is not a turn of parent session %q (turns %d..%d)",
				id, sid, l.SpawnAfterTurn, l.ParentSessionID, schedule[parent[0]].Turn, schedule[parent[len(parent)-1]].Turn)
		}
		if l.JoinBeforeTurn == -1 {
			continue
		}
		at, ok := turnAt(l.ParentSessionID, l.JoinBeforeTurn)
		if !ok {
			return nil, fmt.Errorf("request %d: subagent session %q: join turn %d is not a turn of parent session %q (turns %d..%d)",
				id, sid, l.JoinBeforeTurn, l.ParentSessionID, schedule[parent[0]].Turn, schedule[parent[len(parent)-1]].Turn)
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
	for _, sid := range sessionOrder {
		var path []string
		cur := sid
		for links[cur] != nil && state[cur] != done {
			if state[cur] == visiting {
				k := slices.Index(path, cur)
				return nil, fmt.Errorf("request %d: subagent sessions form a cycle: %s -> %s", linkAt[cur]+1, strings.Join(path[k:], " -> "), cur)
			}
			state[cur] = visiting
			path = append(path, cur)
			cur = links[cur].ParentSessionID
		}
		for _, s := range path {
			state[s] = done
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
