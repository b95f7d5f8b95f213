package bailian

import (
	"fmt"
	"strconv"

	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/jsonscan"
)

// Name, version and block size of the format.
const (
	Name      = "bailian_trace"
	Version   = "1.0.0"
	BlockSize = 16
)

// Descriptor is what the module reports through lens_describe.
func Descriptor() abi.Descriptor {
	return tracefmt.ParserDescriptor(Name, Version, "Alibaba Bailian JSONL trace (seconds, 16-token hash blocks, parent_chat_id sessions)", true)
}

// Parser parses one Bailian JSONL source. Times are normalised to ms since the first row.
type Parser struct {
	lines    tracefmt.Lines
	scan     jsonscan.Scanner
	rec      abi.TraceRequest
	arrival  float64
	hashes   []int64
	haveZero bool
	zero     float64
	roots    map[int64]int64 // chat_id -> root chat_id
	turns    map[int64]int   // root chat_id -> rows seen
	meta     []byte
}

// New returns a parser for one source.
func New() *Parser {
	return &Parser{roots: map[int64]int64{}, turns: map[int64]int{}}
}

// Feed implements tracefmt.Parser.
func (p *Parser) Feed(chunk []byte, emit tracefmt.Emit) error {
	return p.lines.Feed(chunk, func(line int64, text []byte) error { return p.line(line, text, emit) })
}

// End implements tracefmt.Parser.
func (p *Parser) End(emit tracefmt.Emit) error {
	return p.lines.End(func(line int64, text []byte) error { return p.line(line, text, emit) })
}

func (p *Parser) line(line int64, text []byte, emit tracefmt.Emit) error {
	if tracefmt.IsBlank(text) {
		return nil
	}
	var (
		chatID, parent, turn          int64 = 0, -1, 0
		ts                            float64
		hasChat, hasTS, hasIn, hasOut bool
		hasTurn                       bool
		reqType                       string
		input, output                 int64
	)
	p.hashes = p.hashes[:0]
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
		case "chat_id":
			if chatID, err = s.Int(); err != nil {
				return fail("chat_id", err)
			}
			hasChat = true
		case "parent_chat_id":
			if parent, err = s.Int(); err != nil {
				return fail("parent_chat_id", err)
			}
		case "timestamp":
			if ts, err = s.NonNegativeFloat(); err != nil {
				return fail("timestamp", err)
			}
			hasTS = true
		case "input_length":
			if input, err = s.NonNegativeInt(); err != nil {
				return fail("input_length", err)
			}
			hasIn = true
		case "output_length":
			if output, err = s.NonNegativeInt(); err != nil {
				return fail("output_length", err)
			}
			hasOut = true
		case "type":
			if reqType, err = s.String(); err != nil {
				return fail("type", err)
			}
		case "turn":
			if turn, err = s.Int(); err != nil {
				return fail("turn", err)
			}
			if turn < 1 {
				return fail("turn", fmt.Errorf("must be >= 1, found %d", turn))
			}
			hasTurn = true
		case "hash_ids":
			if p.hashes, err = s.IntArray(p.hashes); err != nil {
				return fail("hash_ids", err)
			}
		default:
			return fmt.Errorf("line %d: unknown field %q", line, key)
		}
	}
	if err := s.End(); err != nil {
		return fmt.Errorf("line %d: %w", line, err)
	}
	for _, req := range []struct {
		name string
		ok   bool
	}{{"chat_id", hasChat}, {"timestamp", hasTS}, {"input_length", hasIn}, {"output_length", hasOut}} {
		if !req.ok {
			return fmt.Errorf("line %d: missing required field %q", line, req.name)
		}
	}
	if _, dup := p.roots[chatID]; dup {
		return fail("chat_id", fmt.Errorf("%d repeats an earlier row", chatID))
	}
	root := chatID
	if r, ok := p.roots[parent]; ok && parent != -1 {
		root = r
	}
	p.roots[chatID] = root
	if !p.haveZero {
		p.zero, p.haveZero = ts, true
	}
	if ts < p.zero {
		return fmt.Errorf("line %d: field \"timestamp\": %v is before the first row's timestamp %v", line, ts, p.zero)
	}
	index := p.turns[root]
	p.turns[root] = index + 1
	if hasTurn {
		index = int(turn - 1)
	}

	r := &p.rec
	p.arrival = tracefmt.SecondsToMs(ts - p.zero)
	*r = abi.TraceRequest{
		Line: line, SessionID: strconv.FormatInt(root, 10), TurnIndex: index,
		ArrivalMs: &p.arrival, RecordedMs: p.arrival,
		InputTokens: int(input), OutputTokens: int(output),
		ContextMode: abi.ContextModeSelfContain,
	}
	if len(p.hashes) > 0 {
		r.HashIDs, r.BlockSize = p.hashes, BlockSize
	}
	p.meta = append(p.meta[:0], `{"chat_id":`...)
	p.meta = strconv.AppendInt(p.meta, chatID, 10)
	p.meta = append(p.meta, `,"parent_chat_id":`...)
	p.meta = strconv.AppendInt(p.meta, parent, 10)
	if reqType != "" {
		p.meta = append(p.meta, `,"type":`...)
		p.meta = tracefmt.AppendJSONString(p.meta, reqType)
	}
	p.meta = append(p.meta, '}')
	r.Metadata = p.meta
	return emit(r)
}
