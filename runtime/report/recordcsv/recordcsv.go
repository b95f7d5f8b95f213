package recordcsv

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"

	"github.com/lensfn/lensfn/runtime/loadgen"
)

// Header is the columns every export starts with, in order.
var Header = []string{"request_id", "session_id", "turn", "status_code", "successful", "error",
	"scheduled_at_seconds", "started_at_seconds", "first_token_at_seconds", "completed_at_seconds",
	"latency_ms", "ttft_ms", "tpot_ms", "timeline_drift_ms", "input_tokens", "output_tokens"}

// Writer writes records as CSV rows after a header of Header plus the caller's extra columns.
type Writer struct {
	cw    *csv.Writer
	extra int
}

// NewWriter writes the header at once; extra names columns the caller fills per row (a run's
// phase and stage, for example).
func NewWriter(w io.Writer, extra ...string) (*Writer, error) {
	cw := csv.NewWriter(w)
	if err := cw.Write(append(append([]string{}, Header...), extra...)); err != nil {
		return nil, err
	}
	return &Writer{cw: cw, extra: len(extra)}, nil
}

// Write adds one record's row; extra holds the values of the extra columns (missing ones are
// empty, values are neutralised like every text cell).
func (w *Writer) Write(r loadgen.Record, extra ...string) error {
	row := Row(r)
	for i := range w.extra {
		v := ""
		if i < len(extra) {
			v = Cell(extra[i])
		}
		row = append(row, v)
	}
	return w.cw.Write(row)
}

// Flush writes what is buffered and returns the first error of any write.
func (w *Writer) Flush() error {
	w.cw.Flush()
	return w.cw.Error()
}

// Row is a record's cells in Header's order.
func Row(r loadgen.Record) []string {
	code := ""
	if r.StatusCode != nil {
		code = strconv.Itoa(*r.StatusCode)
	}
	errText := ""
	if r.Error != nil {
		errText = Cell(*r.Error)
	}
	return []string{strconv.FormatInt(r.RequestID, 10), Cell(r.SessionID), strconv.Itoa(r.Turn), code,
		strconv.FormatBool(r.Successful), errText, num(r.ScheduledAtSeconds), num(r.StartedAtSeconds),
		optNum(r.FirstTokenAtSeconds), num(r.CompletedAtSeconds), num(r.LatencyMs), optNum(r.TTFTMs),
		optNum(r.TPOTMs), optNum(r.TimelineDriftMs), num(r.InputTokens), num(r.OutputTokens)}
}

// Cell keeps a spreadsheet from reading an error text or session id as a formula.
func Cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func optNum(v *float64) string {
	if v == nil {
		return ""
	}
	return num(*v)
}
