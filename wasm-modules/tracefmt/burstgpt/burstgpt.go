package burstgpt

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt"
)

// Name and version of the format.
const (
	Name    = "burst_gpt_trace"
	Version = "1.0.0"
)

// Descriptor is what the module reports through lens_describe.
func Descriptor() abi.Descriptor {
	return tracefmt.ParserDescriptor(Name, Version, "BurstGPT CSV (Timestamp seconds, Request/Response tokens; one request per row)", true)
}

// Column names the parser reads; others (Total tokens, Session ID, Elapsed time) are ignored.
const (
	colTimestamp = "Timestamp"
	colRequest   = "Request tokens"
	colResponse  = "Response tokens"
	colModel     = "Model"
	colLogType   = "Log Type"
)

// Parser parses one BurstGPT CSV source. Times are normalised to ms since the first row.
type Parser struct {
	lines                    tracefmt.Lines
	header                   bool
	ncols                    int
	ts, req, resp, model, lt int
	fields                   [][]byte
	rec                      abi.TraceRequest
	arrival                  float64
	haveZero                 bool
	zero                     float64
	meta                     []byte
}

// New returns a parser for one source.
func New() *Parser { return &Parser{} }

// Feed implements tracefmt.Parser.
func (p *Parser) Feed(chunk []byte, emit tracefmt.Emit) error {
	return p.lines.Feed(chunk, func(line int64, text []byte) error { return p.line(line, text, emit) })
}

// End implements tracefmt.Parser.
func (p *Parser) End(emit tracefmt.Emit) error {
	if err := p.lines.End(func(line int64, text []byte) error { return p.line(line, text, emit) }); err != nil {
		return err
	}
	if !p.header {
		return fmt.Errorf("line 1: missing the header row (%s,%s,%s,...)", colTimestamp, colRequest, colResponse)
	}
	return nil
}

func (p *Parser) line(line int64, text []byte, emit tracefmt.Emit) error {
	if tracefmt.IsBlank(text) {
		return nil
	}
	if line == 1 {
		text = bytes.TrimPrefix(text, []byte("\xef\xbb\xbf"))
	}
	var err error
	p.fields, err = splitCSV(p.fields[:0], text)
	if err != nil {
		return fmt.Errorf("line %d: %w", line, err)
	}
	if !p.header {
		return p.readHeader(line)
	}
	if len(p.fields) != p.ncols {
		return fmt.Errorf("line %d: %d fields, the header has %d", line, len(p.fields), p.ncols)
	}
	ts, err := strconv.ParseFloat(string(bytes.TrimSpace(p.fields[p.ts])), 64)
	if err != nil || ts < 0 || math.IsInf(ts, 0) || math.IsNaN(ts) {
		return fmt.Errorf("line %d: column %q: %q is not a number of seconds >= 0", line, colTimestamp, p.fields[p.ts])
	}
	in, err := count(p.fields[p.req])
	if err != nil {
		return fmt.Errorf("line %d: column %q: %w", line, colRequest, err)
	}
	out, err := count(p.fields[p.resp])
	if err != nil {
		return fmt.Errorf("line %d: column %q: %w", line, colResponse, err)
	}
	if !p.haveZero {
		p.zero, p.haveZero = ts, true
	}
	if ts < p.zero {
		return fmt.Errorf("line %d: column %q: %v is before the first row's timestamp %v", line, colTimestamp, ts, p.zero)
	}
	p.arrival = tracefmt.SecondsToMs(ts - p.zero)
	r := &p.rec
	*r = abi.TraceRequest{Line: line, ArrivalMs: &p.arrival, RecordedMs: p.arrival, InputTokens: in, OutputTokens: max(out, 1),
		ContextMode: abi.ContextModeSelfContain}
	p.meta = append(p.meta[:0], `{"timestamp_s":`...)
	p.meta = strconv.AppendFloat(p.meta, ts, 'g', -1, 64)
	if p.model >= 0 {
		r.Model = string(bytes.TrimSpace(p.fields[p.model]))
	}
	if p.lt >= 0 {
		p.meta = append(p.meta, `,"log_type":`...)
		p.meta = tracefmt.AppendJSONString(p.meta, string(bytes.TrimSpace(p.fields[p.lt])))
	}
	if out == 0 {
		p.meta = append(p.meta, `,"recorded_output_tokens":0`...)
	}
	r.Metadata = append(p.meta, '}')
	return emit(r)
}

func (p *Parser) readHeader(line int64) error {
	p.header = true
	p.ncols = len(p.fields)
	p.ts, p.req, p.resp, p.model, p.lt = -1, -1, -1, -1, -1
	for i, f := range p.fields {
		switch strings.TrimSpace(string(f)) {
		case colTimestamp:
			p.ts = i
		case colRequest:
			p.req = i
		case colResponse:
			p.resp = i
		case colModel:
			p.model = i
		case colLogType:
			p.lt = i
		}
	}
	for _, c := range []struct {
		name string
		idx  int
	}{{colTimestamp, p.ts}, {colRequest, p.req}, {colResponse, p.resp}} {
		if c.idx < 0 {
			return fmt.Errorf("line %d: header has no %q column", line, c.name)
		}
	}
	return nil
}

func count(b []byte) (int, error) {
	s := string(bytes.TrimSpace(b))
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		// Some exports write counts as floats ("472.0").
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != math.Trunc(f) || math.IsInf(f, 0) {
			return 0, fmt.Errorf("%q is not a whole number of tokens", s)
		}
		v = int64(f)
	}
	if v < 0 || v > math.MaxInt32 {
		return 0, fmt.Errorf("%d tokens is out of range", v)
	}
	return int(v), nil
}

// splitCSV splits one CSV record (RFC 4180 quoting, no newlines inside fields). Quoted
// fields with doubled quotes are unescaped in place.
func splitCSV(dst [][]byte, line []byte) ([][]byte, error) {
	for {
		if len(line) > 0 && line[0] == '"' {
			field := line[1:]
			w, r := 0, 0
			closed := false
			for r < len(field) {
				if field[r] == '"' {
					if r+1 < len(field) && field[r+1] == '"' {
						field[w] = '"'
						w, r = w+1, r+2
						continue
					}
					closed = true
					r++
					break
				}
				field[w] = field[r]
				w, r = w+1, r+1
			}
			if !closed {
				return dst, fmt.Errorf("field %d: quote not closed", len(dst)+1)
			}
			dst = append(dst, field[:w])
			rest := field[r:]
			if len(rest) == 0 {
				return dst, nil
			}
			if rest[0] != ',' {
				return dst, fmt.Errorf("field %d: unexpected text after the closing quote", len(dst))
			}
			line = rest[1:]
			continue
		}
		i := bytes.IndexByte(line, ',')
		if i < 0 {
			return append(dst, line), nil
		}
		dst = append(dst, line[:i])
		line = line[i+1:]
	}
}
