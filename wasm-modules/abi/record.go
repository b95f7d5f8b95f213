package abi

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// TraceRequest is one normalised trace request (trace-formats.md section 1). Every parser
// maps its rows onto it; times are milliseconds on the format's normalised axis (ms since
// the first request of the file; WEKA: since the start of each trace).
type TraceRequest struct {
	// Source is the file the record came from. The host sets it; it is not encoded.
	Source string `json:"source,omitempty"`
	// Line is the 1-based line, row or request position in the source (0 when unknown).
	Line int64 `json:"line,omitempty"`
	// SessionID groups the turns of one conversation. Empty means the record is its own
	// single-turn session.
	SessionID string `json:"session_id,omitempty"`
	// TurnIndex is the 0-based position of the record inside its session.
	TurnIndex int `json:"turn_index"`
	// ArrivalMs is the intended send time on the normalised axis; nil for a delay-driven turn.
	ArrivalMs *float64 `json:"arrival_ms,omitempty"`
	// DelayMs is the wait after the previous turn of the session completes; nil unless delay-driven.
	DelayMs *float64 `json:"delay_ms,omitempty"`
	// RecordedMs is where the request sits on the normalised axis as recorded, for every
	// record (also delay-driven ones); reports and timelines use it.
	RecordedMs   float64 `json:"recorded_ms"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	// HashIDs name BlockSize-token prompt blocks; equal leading ids mean a shared prefix.
	HashIDs   []int64 `json:"hash_ids,omitempty"`
	BlockSize int     `json:"block_size,omitempty"`
	// Prompt is a literal prompt (text_input, Baseten prompt); nil means synthesise one.
	Prompt *string `json:"prompt,omitempty"`
	// Messages are literal OpenAI chat messages (a JSON array), sent verbatim.
	Messages json.RawMessage `json:"messages,omitempty"`
	// Payload is a complete request body (a JSON object), sent verbatim.
	Payload json.RawMessage `json:"payload,omitempty"`
	// Extra is a JSON object shallow-merged into the request body.
	Extra json.RawMessage `json:"extra,omitempty"`
	// Tools are OpenAI tool definitions (a JSON array) sent with Messages.
	Tools json.RawMessage `json:"tools,omitempty"`
	// Model is the recorded model name (WEKA), empty when the format has none.
	Model string `json:"model,omitempty"`
	// ContextMode tells the replayer whether turns carry their whole context
	// ("message_array_with_responses") or accumulate ("deltas_without_responses").
	ContextMode string `json:"context_mode,omitempty"`
	// Metadata is a JSON object of recorded values that are not sent (request type,
	// recorded TTFT, stop reason, ...).
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// Subagent links a WEKA subagent session to its parent; nil otherwise.
	Subagent *SubagentLink `json:"subagent,omitempty"`
	// JoinDelayMs, on a turn that joins subagents, is the recorded idle gap between the end of
	// the last of them and this turn (the replay's recorded-offset subagent timing uses it).
	JoinDelayMs *float64 `json:"join_delay_ms,omitempty"`
}

// SubagentLink ties a child session to the parent session that spawned it.
type SubagentLink struct {
	ParentSessionID string `json:"parent_session_id"`
	AgentID         string `json:"agent_id,omitempty"`
	AgentType       string `json:"agent_type,omitempty"`
	// SpawnAfterTurn is the parent turn whose completion spawns the child (-1: trace start).
	SpawnAfterTurn int `json:"spawn_after_turn"`
	// JoinBeforeTurn is the parent turn that waits for the child (-1: runs in the background).
	JoinBeforeTurn int `json:"join_before_turn"`
}

// Context modes (AIPerf names).
const (
	ContextModeDeltas      = "deltas_without_responses"
	ContextModeSelfContain = "message_array_with_responses"
)

// Field tags of the record encoding. A record is a little-endian u32 body length followed
// by that many bytes of fields; each field is a u8 tag followed by its value:
// i64 and f64 fields are 8 bytes little-endian, strings and raw JSON are a u32 length plus
// bytes, hash ids are a u32 count plus count i64 values, the subagent link is nested as
// str parent, str agent id, str agent type, i64 spawn, i64 join. Absent or zero fields are
// omitted; tags may come in any order; an unknown tag is an error.
const (
	TagLine         byte = 1  // i64
	TagSessionID    byte = 2  // str
	TagTurnIndex    byte = 3  // i64
	TagArrivalMs    byte = 4  // f64
	TagDelayMs      byte = 5  // f64
	TagRecordedMs   byte = 6  // f64
	TagInputTokens  byte = 7  // i64
	TagOutputTokens byte = 8  // i64
	TagHashIDs      byte = 9  // u32 count + i64 each
	TagBlockSize    byte = 10 // i64
	TagPrompt       byte = 11 // str (present = literal prompt, even when empty)
	TagMessages     byte = 12 // str (raw JSON)
	TagPayload      byte = 13 // str (raw JSON)
	TagExtra        byte = 14 // str (raw JSON)
	TagTools        byte = 15 // str (raw JSON)
	TagModel        byte = 16 // str
	TagContextMode  byte = 17 // str
	TagMetadata     byte = 18 // str (raw JSON)
	TagSubagent     byte = 19 // str, str, str, i64, i64
	TagJoinDelayMs  byte = 20 // f64
)

// AppendRecord appends the encoding of r to dst and returns the extended slice. It does
// not allocate when dst has room.
func AppendRecord(dst []byte, r *TraceRequest) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	if r.Line != 0 {
		dst = appendI64(dst, TagLine, r.Line)
	}
	if r.SessionID != "" {
		dst = appendStr(dst, TagSessionID, r.SessionID)
	}
	if r.TurnIndex != 0 {
		dst = appendI64(dst, TagTurnIndex, int64(r.TurnIndex))
	}
	if r.ArrivalMs != nil {
		dst = appendF64(dst, TagArrivalMs, *r.ArrivalMs)
	}
	if r.DelayMs != nil {
		dst = appendF64(dst, TagDelayMs, *r.DelayMs)
	}
	if r.RecordedMs != 0 {
		dst = appendF64(dst, TagRecordedMs, r.RecordedMs)
	}
	if r.InputTokens != 0 {
		dst = appendI64(dst, TagInputTokens, int64(r.InputTokens))
	}
	if r.OutputTokens != 0 {
		dst = appendI64(dst, TagOutputTokens, int64(r.OutputTokens))
	}
	if len(r.HashIDs) != 0 {
		dst = append(dst, TagHashIDs)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(r.HashIDs)))
		dst = appendInt64s(dst, r.HashIDs)
	}
	if r.BlockSize != 0 {
		dst = appendI64(dst, TagBlockSize, int64(r.BlockSize))
	}
	if r.Prompt != nil {
		dst = appendStr(dst, TagPrompt, *r.Prompt)
	}
	dst = appendRaw(dst, TagMessages, r.Messages)
	dst = appendRaw(dst, TagPayload, r.Payload)
	dst = appendRaw(dst, TagExtra, r.Extra)
	dst = appendRaw(dst, TagTools, r.Tools)
	if r.Model != "" {
		dst = appendStr(dst, TagModel, r.Model)
	}
	if r.ContextMode != "" {
		dst = appendStr(dst, TagContextMode, r.ContextMode)
	}
	dst = appendRaw(dst, TagMetadata, r.Metadata)
	if s := r.Subagent; s != nil {
		dst = appendStr(dst, TagSubagent, s.ParentSessionID)
		dst = appendStrValue(dst, s.AgentID)
		dst = appendStrValue(dst, s.AgentType)
		dst = binary.LittleEndian.AppendUint64(dst, uint64(int64(s.SpawnAfterTurn)))
		dst = binary.LittleEndian.AppendUint64(dst, uint64(int64(s.JoinBeforeTurn)))
	}
	if r.JoinDelayMs != nil {
		dst = appendF64(dst, TagJoinDelayMs, *r.JoinDelayMs)
	}
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// littleEndian: on little-endian machines (amd64, arm64, wasm) an []int64 already has the
// encoding's byte layout and is copied in one go; hash ids are most of a record.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

func appendInt64s(dst []byte, v []int64) []byte {
	if littleEndian {
		return append(dst, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 8*len(v))...)
	}
	for _, h := range v {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(h))
	}
	return dst
}

func appendI64(dst []byte, tag byte, v int64) []byte {
	return binary.LittleEndian.AppendUint64(append(dst, tag), uint64(v))
}

func appendF64(dst []byte, tag byte, v float64) []byte {
	return binary.LittleEndian.AppendUint64(append(dst, tag), math.Float64bits(v))
}

func appendStr(dst []byte, tag byte, s string) []byte {
	return appendStrValue(append(dst, tag), s)
}

func appendStrValue(dst []byte, s string) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}

func appendRaw(dst []byte, tag byte, raw json.RawMessage) []byte {
	if raw == nil {
		return dst
	}
	dst = binary.LittleEndian.AppendUint32(append(dst, tag), uint32(len(raw)))
	return append(dst, raw...)
}

// ErrTruncated reports a record stream that ends inside a record.
var ErrTruncated = errors.New("record stream truncated")

// DecodeRecords decodes every record in buf, calling emit with a freshly allocated
// TraceRequest for each (emit may keep it).
func DecodeRecords(buf []byte, emit func(*TraceRequest) error) error {
	for len(buf) > 0 {
		r := new(TraceRequest)
		rest, err := DecodeRecord(buf, r)
		if err != nil {
			return err
		}
		if err := emit(r); err != nil {
			return err
		}
		buf = rest
	}
	return nil
}

// DecodeRecord decodes the first record of buf into r (which it resets) and returns the
// bytes after it. Strings and raw JSON are copied, so r does not alias buf.
func DecodeRecord(buf []byte, r *TraceRequest) ([]byte, error) {
	*r = TraceRequest{}
	if len(buf) < 4 {
		return nil, ErrTruncated
	}
	n := binary.LittleEndian.Uint32(buf)
	if uint64(n) > uint64(len(buf)-4) {
		return nil, ErrTruncated
	}
	d := decoder{b: buf[4 : 4+n]}
	for len(d.b) > 0 && d.err == nil {
		tag := d.b[0]
		d.b = d.b[1:]
		switch tag {
		case TagLine:
			r.Line = d.i64()
		case TagSessionID:
			r.SessionID = d.str()
		case TagTurnIndex:
			r.TurnIndex = int(d.i64())
		case TagArrivalMs:
			v := d.f64()
			r.ArrivalMs = &v
		case TagDelayMs:
			v := d.f64()
			r.DelayMs = &v
		case TagRecordedMs:
			r.RecordedMs = d.f64()
		case TagInputTokens:
			r.InputTokens = int(d.i64())
		case TagOutputTokens:
			r.OutputTokens = int(d.i64())
		case TagHashIDs:
			c := d.u32()
			if d.err == nil && uint64(c)*8 > uint64(len(d.b)) {
				d.err = ErrTruncated
				break
			}
			r.HashIDs = make([]int64, c)
			raw := d.take(uint64(c) * 8)
			if littleEndian {
				copy(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(r.HashIDs))), 8*len(r.HashIDs)), raw)
			} else {
				for i := range r.HashIDs {
					r.HashIDs[i] = int64(binary.LittleEndian.Uint64(raw[8*i:]))
				}
			}
		case TagBlockSize:
			r.BlockSize = int(d.i64())
		case TagPrompt:
			s := d.str()
			r.Prompt = &s
		case TagMessages:
			r.Messages = d.raw()
		case TagPayload:
			r.Payload = d.raw()
		case TagExtra:
			r.Extra = d.raw()
		case TagTools:
			r.Tools = d.raw()
		case TagModel:
			r.Model = d.str()
		case TagContextMode:
			r.ContextMode = d.knownStr()
		case TagMetadata:
			r.Metadata = d.raw()
		case TagSubagent:
			s := &SubagentLink{ParentSessionID: d.str(), AgentID: d.str(), AgentType: d.str()}
			s.SpawnAfterTurn = int(d.i64())
			s.JoinBeforeTurn = int(d.i64())
			r.Subagent = s
		case TagJoinDelayMs:
			v := d.f64()
			r.JoinDelayMs = &v
		default:
			return nil, fmt.Errorf("record field tag %d is unknown to ABI version %d", tag, Version)
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	return buf[4+n:], nil
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) take(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = ErrTruncated
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) u32() uint32 {
	if b := d.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (d *decoder) i64() int64 {
	if b := d.take(8); b != nil {
		return int64(binary.LittleEndian.Uint64(b))
	}
	return 0
}

func (d *decoder) f64() float64 {
	if b := d.take(8); b != nil {
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	}
	return 0
}

func (d *decoder) str() string {
	n := d.u32()
	return string(d.take(uint64(n)))
}

// knownStr reads a string, reusing the constant for the context modes every record of
// a format repeats (saves an allocation per record on the host).
func (d *decoder) knownStr() string {
	n := d.u32()
	b := d.take(uint64(n))
	switch string(b) {
	case ContextModeDeltas:
		return ContextModeDeltas
	case ContextModeSelfContain:
		return ContextModeSelfContain
	}
	return string(b)
}

func (d *decoder) raw() json.RawMessage {
	n := d.u32()
	b := d.take(uint64(n))
	if b == nil {
		return nil
	}
	return append(json.RawMessage{}, b...)
}
