package baseten

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"

	"github.com/parquet-go/parquet-go"

	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt"
)

// Name and version of the format.
const (
	Name    = "baseten_trace"
	Version = "1.0.0"
)

// Descriptor is what the module reports through lens_describe.
func Descriptor() abi.Descriptor {
	return tracefmt.ParserDescriptor(Name, Version, "Baseten completion logs in Parquet (Unix ms, literal prompts, optional KV block hashes)", true)
}

// MaxSourceBytes bounds one buffered source.
const MaxSourceBytes = 1 << 30

// Column names (AIPerf's schema).
const (
	ColTimestamp   = "timestamp_start_unix_ms"
	ColPrompt      = "prompt"
	ColInput       = "input_tokens"
	ColOutput      = "output_tokens"
	ColHashes      = "total_hashes"
	ColBlockSize   = "block_size"
	ColSession     = "provided_session_id"
	ColPoorSession = "poor_man_session_id"
	ColE2E         = "duration_e2e_ms"
	ColTTFT        = "duration_ttft_ms"
	ColCanceled    = "request_canceled"
	ColModel       = "model_name"
)

// Parser parses one Baseten Parquet source.
type Parser struct {
	buf []byte
}

// New returns a parser for one source.
func New() *Parser { return &Parser{} }

// Feed implements tracefmt.Parser: it buffers the source.
func (p *Parser) Feed(chunk []byte, emit tracefmt.Emit) error {
	if len(p.buf)+len(chunk) > MaxSourceBytes {
		return fmt.Errorf("source larger than %d bytes", MaxSourceBytes)
	}
	p.buf = append(p.buf, chunk...)
	return nil
}

type row struct {
	index            int64 // 1-based row number in the file
	ts               int64
	prompt           string
	input, output    int64
	hashes           []int64
	blockSize        int64
	session          string
	hasSession       bool
	e2e, ttft, cancl *int64
	model            *string
}

// metadata is what a row records but the replay does not send.
type metadata struct {
	TimestampUnixMs      int64   `json:"timestamp_start_unix_ms"`
	DurationE2EMs        *int64  `json:"duration_e2e_ms,omitempty"`
	DurationTTFTMs       *int64  `json:"duration_ttft_ms,omitempty"`
	RequestCanceled      *int64  `json:"request_canceled,omitempty"`
	ModelName            *string `json:"model_name,omitempty"`
	RecordedOutputTokens *int64  `json:"recorded_output_tokens,omitempty"`
}

// End implements tracefmt.Parser: it decodes the Parquet file and emits every row.
func (p *Parser) End(emit tracefmt.Emit) (err error) {
	// parquet-go panics on some corrupt files (slice bounds, unexpected logical types);
	// that is bad input, not a broken module.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("corrupt Parquet file: %v", r)
		}
	}()
	if len(p.buf) == 0 {
		return errors.New("empty source: not a Parquet file")
	}
	f, err := parquet.OpenFile(bytes.NewReader(p.buf), int64(len(p.buf)))
	if err != nil {
		return fmt.Errorf("not a readable Parquet file: %w", err)
	}
	cols, err := locateColumns(f.Schema())
	if err != nil {
		return err
	}
	var rows []row
	var index int64
	batch := make([]parquet.Row, 128)
	for _, rg := range f.RowGroups() {
		rr := rg.Rows()
		for {
			n, err := rr.ReadRows(batch)
			for _, values := range batch[:n] {
				index++
				r, err := cols.decode(index, values)
				if err != nil {
					rr.Close()
					return err
				}
				rows = append(rows, r)
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rr.Close()
				return fmt.Errorf("row %d: reading Parquet: %w", index+1, err)
			}
		}
		rr.Close()
	}
	if len(rows) == 0 {
		return errors.New("the Parquet file has no rows")
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].ts < rows[j].ts })
	zero := rows[0].ts
	turns := map[string]int{}
	for i := range rows {
		r := &rows[i]
		arrival := float64(r.ts - zero)
		rec := abi.TraceRequest{
			Line: r.index, ArrivalMs: &arrival, RecordedMs: arrival, Prompt: &r.prompt,
			InputTokens: int(r.input), OutputTokens: int(max(r.output, 1)), ContextMode: abi.ContextModeSelfContain,
		}
		if r.hasSession {
			rec.SessionID = r.session
			rec.TurnIndex = turns[r.session]
			turns[r.session]++
		}
		if len(r.hashes) > 0 {
			rec.HashIDs = r.hashes
		}
		rec.BlockSize = int(r.blockSize)
		m := metadata{TimestampUnixMs: r.ts, DurationE2EMs: r.e2e, DurationTTFTMs: r.ttft, RequestCanceled: r.cancl, ModelName: r.model}
		if r.output == 0 {
			zeroOut := int64(0)
			m.RecordedOutputTokens = &zeroOut
		}
		if rec.Metadata, err = json.Marshal(m); err != nil {
			return err
		}
		if err := emit(&rec); err != nil {
			return err
		}
	}
	return nil
}

// columns maps the columns we read to their leaf column index (-1 when absent).
type columns struct {
	ts, prompt, input, output, hashes, block, session, poor, e2e, ttft, cancl, model int
}

func locateColumns(s *parquet.Schema) (columns, error) {
	c := columns{}
	find := func(name string, required bool) (int, error) {
		for _, path := range [][]string{{name}, {name, "list", "element"}, {name, "list", "item"}, {name, "bag", "array_element"}} {
			if leaf, ok := s.Lookup(path...); ok {
				return leaf.ColumnIndex, nil
			}
		}
		if required {
			return -1, fmt.Errorf("required column %q is missing", name)
		}
		return -1, nil
	}
	var err error
	for _, f := range []struct {
		name     string
		dst      *int
		required bool
	}{
		{ColTimestamp, &c.ts, true}, {ColPrompt, &c.prompt, true}, {ColInput, &c.input, true}, {ColOutput, &c.output, true},
		{ColHashes, &c.hashes, false}, {ColBlockSize, &c.block, false}, {ColSession, &c.session, false},
		{ColPoorSession, &c.poor, false}, {ColE2E, &c.e2e, false}, {ColTTFT, &c.ttft, false},
		{ColCanceled, &c.cancl, false}, {ColModel, &c.model, false},
	} {
		if *f.dst, err = find(f.name, f.required); err != nil {
			return c, err
		}
	}
	return c, nil
}

func (c *columns) decode(index int64, values parquet.Row) (row, error) {
	r := row{index: index}
	var seen [4]bool
	var poor string
	hasPoor := false
	fail := func(col string, err error) error { return fmt.Errorf("row %d: column %q: %w", index, col, err) }
	for _, v := range values {
		col := v.Column()
		if v.IsNull() {
			continue
		}
		var err error
		switch col {
		case c.ts:
			r.ts, err = integer(v)
			if err == nil && r.ts < 0 {
				err = fmt.Errorf("negative value %d", r.ts)
			}
			if err != nil {
				return r, fail(ColTimestamp, err)
			}
			seen[0] = true
		case c.prompt:
			if v.Kind() != parquet.ByteArray {
				return r, fail(ColPrompt, fmt.Errorf("expected a string, found %s", v.Kind()))
			}
			r.prompt, seen[1] = string(v.ByteArray()), true
		case c.input:
			if r.input, err = count(v); err != nil {
				return r, fail(ColInput, err)
			}
			seen[2] = true
		case c.output:
			if r.output, err = count(v); err != nil {
				return r, fail(ColOutput, err)
			}
			seen[3] = true
		case c.hashes:
			h, err := integer(v)
			if err != nil {
				return r, fail(ColHashes, err)
			}
			r.hashes = append(r.hashes, h)
		case c.block:
			if r.blockSize, err = integer(v); err == nil && r.blockSize <= 0 {
				err = fmt.Errorf("must be > 0, found %d", r.blockSize)
			}
			if err != nil {
				return r, fail(ColBlockSize, err)
			}
		case c.session:
			r.session, r.hasSession = key(v), true
		case c.poor:
			poor, hasPoor = key(v), true
		case c.e2e:
			r.e2e, err = optional(v)
			if err != nil {
				return r, fail(ColE2E, err)
			}
		case c.ttft:
			r.ttft, err = optional(v)
			if err != nil {
				return r, fail(ColTTFT, err)
			}
		case c.cancl:
			r.cancl, err = optional(v)
			if err != nil {
				return r, fail(ColCanceled, err)
			}
		case c.model:
			s := string(v.ByteArray())
			r.model = &s
		}
	}
	for i, name := range []string{ColTimestamp, ColPrompt, ColInput, ColOutput} {
		if !seen[i] {
			return r, fail(name, errors.New("required value is null"))
		}
	}
	if !r.hasSession && hasPoor {
		r.session, r.hasSession = poor, true
	}
	return r, nil
}

func integer(v parquet.Value) (int64, error) {
	switch v.Kind() {
	case parquet.Int32:
		return int64(v.Int32()), nil
	case parquet.Int64:
		return v.Int64(), nil
	case parquet.Double, parquet.Float:
		f := v.Double()
		if v.Kind() == parquet.Float {
			f = float64(v.Float())
		}
		if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, fmt.Errorf("expected an integer, found %v", f)
		}
		return int64(f), nil
	}
	return 0, fmt.Errorf("expected an integer, found a %s value", v.Kind())
}

func count(v parquet.Value) (int64, error) {
	n, err := integer(v)
	if err == nil && n < 0 {
		err = fmt.Errorf("negative value %d", n)
	}
	return n, err
}

func optional(v parquet.Value) (*int64, error) {
	n, err := integer(v)
	if err != nil {
		return nil, err
	}
	return &n, nil
}

func key(v parquet.Value) string {
	switch v.Kind() {
	case parquet.ByteArray, parquet.FixedLenByteArray:
		return string(v.ByteArray())
	case parquet.Int32, parquet.Int64:
		n, _ := integer(v)
		return strconv.FormatInt(n, 10)
	}
	return v.String()
}
