package weka

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt"
)

// Name and version of the format.
const (
	Name    = "weka_public_dataset"
	Version = "1.0.0"
)

// TraceRange is what a trace range selects in this format (the descriptor's trace_range).
const TraceRange = "turns: on each trace's own clock (every trace starts at 0 s), the parent turns whose t falls in " +
	"[start, end); a trace's first kept turn is released at (t - start) / scale. A subagent is kept with the parent " +
	"turn that spawns it (one spawned before the first turn, with the first turn), with its requests that start " +
	"before end; a subagent whose joining turn is outside the range runs in the background."

// Descriptor is what the module reports through lens_describe. Every trace has its own time
// origin, so the module selects a range itself, turn by turn on each trace's clock, keeping the
// links between parents and subagents consistent; the host shifts and scales the rest.
func Descriptor() abi.Descriptor {
	d := tracefmt.ParserDescriptor(Name, Version, "WEKA agentic-coding traces (one JSON trace per file or a JSONL of traces; subagent sessions)", true)
	d.Capabilities[abi.CapabilitySelectsTraceRange] = true
	d.TraceRange = TraceRange
	return d
}

// MaxTraceBytes bounds one buffered trace.
const MaxTraceBytes = 512 << 20

// Parser parses one WEKA source: a single JSON trace, or a stream of them (JSONL, as the
// HuggingFace corpora ship them). Each top-level value is decoded as soon as its closing
// brace arrives, so memory holds one trace at a time, not the whole source.
type Parser struct {
	buf      []byte
	scanned  int   // bytes of buf already scanned for the end of the current value
	depth    int   // bracket depth at buf[scanned]
	inString bool  // buf[scanned] is inside a string
	escaped  bool  // the previous byte was a backslash inside a string
	traces   int   // traces decoded so far
	position int64 // requests decoded so far, for Line
	// The window [startMs, endMs) on each trace's clock (TraceRange).
	startMs, endMs float64
}

// New returns a parser for one source that keeps every request.
func New() *Parser { return &Parser{endMs: math.Inf(1)} }

// NewWindowed returns a parser that keeps the turns of the window [startMs, endMs) of every
// trace (endMs nil: to the end), as TraceRange says.
func NewWindowed(startMs float64, endMs *float64) *Parser {
	p := New()
	p.startMs = startMs
	if endMs != nil {
		p.endMs = *endMs
	}
	return p
}

// inWindow says whether a request recorded at tMs is in the parser's window.
func (p *Parser) inWindow(tMs float64) bool { return tMs >= p.startMs && tMs < p.endMs }

// Feed implements tracefmt.Parser: it decodes every trace that the chunk completes.
func (p *Parser) Feed(chunk []byte, emit tracefmt.Emit) error {
	if len(p.buf)+len(chunk) > MaxTraceBytes {
		return fmt.Errorf("trace %d: larger than %d bytes", p.traces+1, MaxTraceBytes)
	}
	p.buf = append(p.buf, chunk...)
	for i := p.scanned; i < len(p.buf); i++ {
		c := p.buf[i]
		if p.inString {
			switch {
			case p.escaped:
				p.escaped = false
			case c == '\\':
				p.escaped = true
			case c == '"':
				p.inString = false
			}
			continue
		}
		switch c {
		case '"':
			p.inString = true
		case '{', '[':
			p.depth++
		case '}', ']':
			p.depth--
			if p.depth < 0 {
				return fmt.Errorf("trace %d: unexpected %q", p.traces+1, c)
			}
			if p.depth == 0 {
				if err := p.decode(p.buf[:i+1], emit); err != nil {
					return err
				}
				p.buf = append(p.buf[:0], p.buf[i+1:]...)
				i = -1
			}
		}
	}
	p.scanned = len(p.buf)
	return nil
}

// End implements tracefmt.Parser: what is left must be whitespace.
func (p *Parser) End(emit tracefmt.Emit) error {
	if rest := bytes.TrimSpace(p.buf); len(rest) > 0 {
		if err := p.decode(rest, emit); err != nil {
			return err
		}
	}
	if p.traces == 0 {
		return errors.New("source holds no trace")
	}
	return nil
}

// decode decodes one top-level value (a complete trace, or leftovers that encoding/json
// will name the problem in) and emits its requests.
func (p *Parser) decode(value []byte, emit tracefmt.Emit) error {
	p.traces++
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.DisallowUnknownFields()
	var t trace
	if err := dec.Decode(&t); err != nil {
		return fmt.Errorf("trace %d: %w", p.traces, describeJSONError(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("trace %d: unexpected data after the trace object", p.traces)
	}
	return p.trace(p.traces, &t, emit)
}

type trace struct {
	ID           string            `json:"id"`
	Models       []string          `json:"models"`
	BlockSize    *int              `json:"block_size"`
	HashIDScope  string            `json:"hash_id_scope"`
	ToolTokens   int64             `json:"tool_tokens"`
	SystemTokens int64             `json:"system_tokens"`
	Requests     []json.RawMessage `json:"requests"`
	Totals       json.RawMessage   `json:"totals"`
}

type entry struct {
	T           *float64 `json:"t"`
	Type        string   `json:"type"`
	Model       string   `json:"model"`
	In          *int64   `json:"in"`
	Out         *int64   `json:"out"`
	HashIDs     []int64  `json:"hash_ids"`
	InputTypes  []string `json:"input_types"`
	OutputTypes []string `json:"output_types"`
	Stop        *string  `json:"stop"`
	APITime     *float64 `json:"api_time"`
	ThinkTime   *float64 `json:"think_time"`
	TTFT        *float64 `json:"ttft"`

	AgentID      string            `json:"agent_id"`
	SubagentType string            `json:"subagent_type"`
	Status       string            `json:"status"`
	DurationMs   *float64          `json:"duration_ms"`
	TotalTokens  *int64            `json:"total_tokens"`
	ToolUseCount *int64            `json:"tool_use_count"`
	Models       []string          `json:"models"`
	Requests     []json.RawMessage `json:"requests"`
	ToolTokens   *int64            `json:"tool_tokens"`
	SystemTokens *int64            `json:"system_tokens"`
}

// metadata is what a request records but the replay does not send.
type metadata struct {
	Type                 string   `json:"type,omitempty"`
	Stop                 *string  `json:"stop,omitempty"`
	APITime              *float64 `json:"api_time,omitempty"`
	ThinkTime            *float64 `json:"think_time,omitempty"`
	TTFT                 *float64 `json:"ttft,omitempty"`
	InputTypes           []string `json:"input_types,omitempty"`
	OutputTypes          []string `json:"output_types,omitempty"`
	RecordedOutputTokens *int64   `json:"recorded_output_tokens,omitempty"`
	ToolTokens           *int64   `json:"tool_tokens,omitempty"`
	SystemTokens         *int64   `json:"system_tokens,omitempty"`
}

func describeJSONError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("field %q: expected %s, found a JSON %s", te.Field, te.Type, te.Value)
	}
	return err
}

func (p *Parser) trace(n int, t *trace, emit tracefmt.Emit) error {
	where := fmt.Sprintf("trace %d", n)
	if t.ID != "" {
		where = fmt.Sprintf("trace %q", t.ID)
	}
	switch {
	case t.ID == "":
		return fmt.Errorf("%s: missing required field \"id\"", where)
	case t.BlockSize == nil || *t.BlockSize <= 0:
		return fmt.Errorf("%s: field \"block_size\": must be an integer > 0", where)
	case t.HashIDScope != "local":
		return fmt.Errorf("%s: field \"hash_id_scope\": %q is not supported (only \"local\")", where, t.HashIDScope)
	case t.Requests == nil:
		return fmt.Errorf("%s: missing required field \"requests\"", where)
	}
	entries := make([]entry, len(t.Requests))
	for i, raw := range t.Requests {
		if err := decodeEntry(raw, &entries[i]); err != nil {
			return fmt.Errorf("%s: request %d: %w", where, i+1, err)
		}
	}
	var kept []bool // by parent turn: inside the window
	for i := range entries {
		if entries[i].Type != "subagent" {
			kept = append(kept, p.inWindow(tracefmt.SecondsToMs(*entries[i].T)))
		}
	}
	sess := session{id: t.ID, blockSize: *t.BlockSize}
	turn := 0
	joinEnd, joining := 0.0, false // the latest recorded end (s) of the subagents the next turn joins
	for i := range entries {
		e := &entries[i]
		if e.Type != "subagent" {
			p.position++
			if kept[turn] {
				var extra *metadata
				if turn == 0 {
					extra = &metadata{ToolTokens: &t.ToolTokens, SystemTokens: &t.SystemTokens}
				}
				var joinDelay *float64
				if joining {
					d := max(0, tracefmt.SecondsToMs(*e.T-joinEnd))
					joinDelay = &d
				}
				// A trace's first kept turn (or one whose predecessor the window dropped) is placed by its t.
				arrival := turn == 0 || !kept[turn-1]
				if err := p.request(&sess, e, *e.T, turn, arrival, extra, joinDelay, emit); err != nil {
					return fmt.Errorf("%s: request %d: %w", where, i+1, err)
				}
			}
			turn++
			joining = false
			continue
		}
		agent := e.AgentID
		if agent == "" {
			agent = fmt.Sprintf("subagent_%d", i+1)
		}
		// A subagent goes with the turn that spawns it (one before the first turn, with the first).
		spawnedInWindow := len(kept) > 0 && kept[max(turn-1, 0)]
		join := -1
		if turn < len(kept) && kept[turn] {
			join = turn
		}
		child := session{id: t.ID + "/" + agent, blockSize: *t.BlockSize, spawnMs: tracefmt.SecondsToMs(*e.T),
			link: &abi.SubagentLink{ParentSessionID: t.ID, AgentID: e.AgentID, AgentType: e.SubagentType,
				SpawnAfterTurn: turn - 1, JoinBeforeTurn: join}}
		end, emitted := *e.T, false
		for j, raw := range e.Requests {
			var inner entry
			if err := decodeEntry(raw, &inner); err != nil {
				return fmt.Errorf("%s: request %d (subagent %s): request %d: %w", where, i+1, agent, j+1, err)
			}
			if inner.Type == "subagent" {
				return fmt.Errorf("%s: request %d (subagent %s): request %d: nested subagents are not supported", where, i+1, agent, j+1)
			}
			p.position++
			// AIPerf: an inner t smaller than the marker's is relative to the spawn.
			abs := *inner.T
			if abs < *e.T {
				abs += *e.T
			}
			end = max(end, abs+value(inner.APITime))
			if !spawnedInWindow || tracefmt.SecondsToMs(abs) >= p.endMs || child.turns < j {
				continue // a subagent keeps its requests up to the first one at or after the end
			}
			var extra *metadata
			if j == 0 {
				extra = &metadata{ToolTokens: e.ToolTokens, SystemTokens: e.SystemTokens}
			}
			if err := p.request(&child, &inner, abs, j, false, extra, nil, emit); err != nil {
				return fmt.Errorf("%s: request %d (subagent %s): request %d: %w", where, i+1, agent, j+1, err)
			}
			emitted = true
		}
		if e.DurationMs != nil && *e.DurationMs >= 0 {
			end = *e.T + *e.DurationMs/1000 // AIPerf's recorded end of a subagent prefers its duration
		}
		if emitted && join >= 0 {
			if joining {
				end = max(end, joinEnd)
			}
			joinEnd, joining = end, true
		}
	}
	return nil
}

func value(v *float64) float64 {
	if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
		return 0
	}
	return max(*v, 0)
}

func decodeEntry(raw json.RawMessage, e *entry) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(e); err != nil {
		return describeJSONError(err)
	}
	if e.T == nil {
		return errors.New("missing required field \"t\"")
	}
	if *e.T < 0 || math.IsInf(*e.T, 0) {
		return fmt.Errorf("field \"t\": %v is not a time >= 0", *e.T)
	}
	switch e.Type {
	case "subagent":
		if e.Requests == nil && e.Status != "async_launched" {
			return errors.New("subagent without field \"requests\"")
		}
		return nil
	case "n", "s":
	default:
		return fmt.Errorf("field \"type\": %q is not \"n\", \"s\" or \"subagent\"", e.Type)
	}
	if e.In == nil || *e.In < 0 {
		return errors.New("field \"in\": required, a token count >= 0")
	}
	if e.Out == nil || *e.Out < 0 {
		return errors.New("field \"out\": required, a token count >= 0")
	}
	return nil
}

type session struct {
	id        string
	blockSize int
	turns     int     // requests emitted
	prevT     float64 // ms
	prevAPI   float64 // ms
	spawnMs   float64
	link      *abi.SubagentLink
}

// request emits e as turn turn of s, recorded at tSeconds; arrival places it by its t (a
// parent's first kept turn), else it is delay-driven. joinDelay is its JoinDelayMs.
func (p *Parser) request(s *session, e *entry, tSeconds float64, turn int, arrival bool, extra *metadata, joinDelay *float64, emit tracefmt.Emit) error {
	tMs := tracefmt.SecondsToMs(tSeconds)
	r := abi.TraceRequest{
		Line: p.position, SessionID: s.id, TurnIndex: turn, RecordedMs: tMs,
		InputTokens: int(*e.In), OutputTokens: int(max(*e.Out, 1)), Model: e.Model,
		ContextMode: abi.ContextModeSelfContain, Subagent: s.link, JoinDelayMs: joinDelay,
	}
	if len(e.HashIDs) > 0 {
		r.HashIDs, r.BlockSize = e.HashIDs, s.blockSize
	}
	switch {
	case arrival:
		at := tMs
		r.ArrivalMs = &at
	case s.turns == 0:
		delay := math.Max(0, tMs-s.spawnMs)
		r.DelayMs = &delay
	default:
		delay := math.Max(0, tracefmt.SecondsToMs((tMs-s.prevT-s.prevAPI)/1000))
		r.DelayMs = &delay
	}
	m := metadata{Type: e.Type, Stop: e.Stop, APITime: e.APITime, ThinkTime: e.ThinkTime, TTFT: e.TTFT,
		InputTypes: e.InputTypes, OutputTypes: e.OutputTypes}
	if *e.Out == 0 {
		m.RecordedOutputTokens = e.Out
	}
	if extra != nil {
		m.ToolTokens, m.SystemTokens = extra.ToolTokens, extra.SystemTokens
	}
	meta, err := json.Marshal(m)
	if err != nil {
		return err
	}
	r.Metadata = meta
	s.turns++
	s.prevT = tMs
	s.prevAPI = 0
	if e.APITime != nil {
		s.prevAPI = *e.APITime * 1000
	}
	return emit(&r)
}
