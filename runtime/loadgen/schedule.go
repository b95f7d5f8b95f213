package loadgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
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
	// delay-driven). On a session's first turn it counts from the run's start. A later turn
	// with neither an arrival nor a delay is released as soon as the previous turn is done.
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
		bySession[r.SessionID] = append(bySession[r.SessionID], i)
	}
	for sid, turns := range bySession {
		sort.SliceStable(turns, func(a, b int) bool { return schedule[turns[a]].Turn < schedule[turns[b]].Turn })
		for k := 1; k < len(turns); k++ {
			if schedule[turns[k]].Turn == schedule[turns[k-1]].Turn {
				return nil, fmt.Errorf("request %d: session %q has turn %d twice (also request %d)",
					turns[k]+1, sid, schedule[turns[k]].Turn, turns[k-1]+1)
			}
			p.next[turns[k-1]] = turns[k]
		}
		p.heads = append(p.heads, turns[0])
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
