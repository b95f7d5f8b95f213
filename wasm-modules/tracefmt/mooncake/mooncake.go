package mooncake

import (
	"encoding/json"
	"fmt"

	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/jsonscan"
)

// Name, version and capabilities of the format, as the module describes itself.
const (
	Name    = "mooncake_trace"
	Version = "1.0.0"
	// BlockSize is the number of tokens one hash id stands for (AIPerf's default_block_size).
	BlockSize = 512
)

// Descriptor is what the module reports through lens_describe.
func Descriptor() abi.Descriptor {
	return tracefmt.ParserDescriptor(Name, Version, "Mooncake JSONL trace (ms timestamps, 512-token hash blocks)", true)
}

type session struct {
	turns        int
	lastRecorded float64
}

// Parser parses one Mooncake JSONL source. Times are normalised to ms since the first
// timestamp in the file; a later timestamp before it is an error.
type Parser struct {
	lines    tracefmt.Lines
	scan     jsonscan.Scanner
	rec      abi.TraceRequest
	arrival  float64
	delay    float64
	prompt   string
	hashes   []int64
	haveZero bool
	zero     float64
	sessions map[string]*session
}

// New returns a parser for one source.
func New() *Parser { return &Parser{} }

// Feed implements tracefmt.Parser.
func (p *Parser) Feed(chunk []byte, emit tracefmt.Emit) error {
	return p.lines.Feed(chunk, func(line int64, text []byte) error { return p.line(line, text, emit) })
}

// End implements tracefmt.Parser.
func (p *Parser) End(emit tracefmt.Emit) error {
	return p.lines.End(func(line int64, text []byte) error { return p.line(line, text, emit) })
}

var metadataDelta = json.RawMessage(`{"message_mode":"delta"}`)

func (p *Parser) line(line int64, text []byte, emit tracefmt.Emit) error {
	if tracefmt.IsBlank(text) {
		return nil
	}
	r := &p.rec
	*r = abi.TraceRequest{Line: line}
	var (
		ts, delay                            float64
		hasTS, hasDelay, hasInput, hasHashes bool
		sessionKey                           []byte
		messageMode                          string
	)
	s := &p.scan
	s.Reset(text)
	fail := func(field string, err error) error {
		return fmt.Errorf("line %d: %w", line, tracefmt.FieldError(field, err))
	}
	if err := s.BeginObject(); err != nil {
		return fmt.Errorf("line %d: %w", line, err)
	}
	for {
		key, ok, err := s.NextKey()
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		if !ok {
			break
		}
		if s.Null() {
			continue
		}
		switch string(key) {
		case "timestamp":
			// The range checks stay inline: a call more per field costs the guest ~7 %.
			if ts, err = s.Float(); err == nil && ts < 0 {
				err = fmt.Errorf("negative value %v", ts)
			}
			if err != nil {
				return fail("timestamp", err)
			}
			hasTS = true
		case "delay":
			if delay, err = s.Float(); err == nil && delay < 0 {
				err = fmt.Errorf("negative value %v", delay)
			}
			if err != nil {
				return fail("delay", err)
			}
			hasDelay = true
		case "input_length":
			v, err := s.Int()
			if err == nil && v < 0 {
				err = fmt.Errorf("negative value %d", v)
			}
			if err != nil {
				return fail("input_length", err)
			}
			r.InputTokens, hasInput = int(v), true
		case "output_length":
			v, err := s.Int()
			if err == nil && v < 0 {
				err = fmt.Errorf("negative value %d", v)
			}
			if err != nil {
				return fail("output_length", err)
			}
			r.OutputTokens = int(v)
		case "hash_ids":
			if p.hashes, err = s.IntArray(p.hashes); err != nil {
				return fail("hash_ids", err)
			}
			hasHashes = true
		case "session_id":
			if sessionKey, err = sessionKeyOf(s); err != nil {
				return fail("session_id", err)
			}
		case "text_input":
			str, err := s.String()
			if err != nil {
				return fail("text_input", err)
			}
			p.prompt = str
			r.Prompt = &p.prompt
		case "messages":
			if r.Messages, err = rawOf(s, '['); err != nil {
				return fail("messages", err)
			}
		case "tools":
			if r.Tools, err = rawOf(s, '['); err != nil {
				return fail("tools", err)
			}
		case "payload":
			if r.Payload, err = rawOf(s, '{'); err != nil {
				return fail("payload", err)
			}
		case "extra":
			if r.Extra, err = rawOf(s, '{'); err != nil {
				return fail("extra", err)
			}
		case "message_mode":
			if messageMode, err = s.String(); err != nil {
				return fail("message_mode", err)
			}
			if messageMode != "history" && messageMode != "delta" {
				return fail("message_mode", fmt.Errorf("must be \"history\" or \"delta\", found %q", messageMode))
			}
		case "context_mode":
			if r.ContextMode, err = s.String(); err != nil {
				return fail("context_mode", err)
			}
		default:
			return fmt.Errorf("line %d: unknown field %q", line, key)
		}
	}
	if err := s.End(); err != nil {
		return fmt.Errorf("line %d: %w", line, err)
	}
	if !hasInput && r.Prompt == nil && r.Messages == nil && r.Payload == nil {
		return fmt.Errorf("line %d: needs one of the fields \"input_length\", \"text_input\", \"messages\" or \"payload\"", line)
	}
	if hasHashes && !hasInput {
		return fmt.Errorf("line %d: field \"hash_ids\": only allowed together with \"input_length\"", line)
	}
	if r.Tools != nil && r.Messages == nil {
		return fmt.Errorf("line %d: field \"tools\": only allowed together with \"messages\"", line)
	}
	if messageMode != "" && r.Messages == nil {
		return fmt.Errorf("line %d: field \"message_mode\": only allowed together with \"messages\"", line)
	}
	if hasHashes {
		r.HashIDs, r.BlockSize = p.hashes, BlockSize
	}
	if messageMode == "delta" {
		r.Metadata = metadataDelta
	}
	if r.ContextMode == "" {
		if r.Payload != nil || (r.Messages != nil && messageMode != "delta") {
			r.ContextMode = abi.ContextModeSelfContain
		} else {
			r.ContextMode = abi.ContextModeDeltas
		}
	}

	var sess *session
	if sessionKey != nil {
		if p.sessions == nil {
			p.sessions = make(map[string]*session)
		}
		sess = p.sessions[string(sessionKey)]
		if sess == nil {
			sess = &session{}
			p.sessions[string(sessionKey)] = sess
		}
		r.SessionID = string(sessionKey)
		r.TurnIndex = sess.turns
	}
	switch {
	case hasTS:
		if !p.haveZero {
			p.zero, p.haveZero = ts, true
		}
		if ts < p.zero {
			return fmt.Errorf("line %d: field \"timestamp\": %v is before the first request's timestamp %v", line, ts, p.zero)
		}
		p.arrival = ts - p.zero
		r.ArrivalMs, r.RecordedMs = &p.arrival, p.arrival
	case hasDelay:
		p.delay = delay
		r.DelayMs = &p.delay
		if sess != nil {
			r.RecordedMs = sess.lastRecorded + delay
		}
	default:
		if sess != nil {
			r.RecordedMs = sess.lastRecorded
		}
	}
	if sess != nil {
		sess.turns++
		sess.lastRecorded = r.RecordedMs
	}
	return emit(r)
}

// sessionKeyOf reads a session id: a string, or an integer kept as its digits.
func sessionKeyOf(s *jsonscan.Scanner) ([]byte, error) {
	raw, err := s.Raw()
	if err != nil {
		return nil, err
	}
	switch {
	case raw[0] == '"':
		var str jsonscan.Scanner
		str.Reset(raw)
		v, err := str.String()
		return []byte(v), err
	case raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'):
		return raw, nil
	}
	return nil, fmt.Errorf("expected a string or integer, found %s", raw)
}

func rawOf(s *jsonscan.Scanner, open byte) (json.RawMessage, error) {
	raw, err := s.Raw()
	if err != nil {
		return nil, err
	}
	if raw[0] != open {
		kind := "an array"
		if open == '{' {
			kind = "an object"
		}
		return nil, fmt.Errorf("expected %s", kind)
	}
	return raw, nil
}
