package lensctl

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"
	"golang.org/x/term"
	"gopkg.in/yaml.v3"
)

// printer writes a command's result as a table (default), JSON or YAML.
type printer struct {
	format string
	out    io.Writer
}

func (p printer) validate() error {
	switch p.format {
	case "table", "json", "yaml":
		return nil
	}
	return usageError{fmt.Errorf("--output must be table, json or yaml, not %q", p.format)}
}

// print writes v as JSON or YAML (full precision), or calls tableFn for the table format (numbers
// rounded for people, see human).
func (p printer) print(v any, tableFn func(t table.Writer)) error {
	switch p.format {
	case "json":
		enc := json.NewEncoder(p.out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		// Through JSON, so YAML keys are the API's field names.
		raw, err := json.Marshal(v)
		if err != nil {
			return err
		}
		var generic any
		if err := json.Unmarshal(raw, &generic); err != nil {
			return err
		}
		enc := yaml.NewEncoder(p.out)
		enc.SetIndent(2)
		if err := enc.Encode(generic); err != nil {
			return err
		}
		return enc.Close()
	}
	t := p.table()
	tableFn(t)
	t.Render()
	return nil
}

// maxTableWidth is the widest a table is drawn when stdout is no narrower terminal.
const maxTableWidth = 100

// tableWidth is the widest a table may be: maxTableWidth, or a narrower terminal's width.
func (p printer) tableWidth() int {
	if w := terminalWidth(p.out); w > 0 && w < maxTableWidth {
		return w
	}
	return maxTableWidth
}

// terminalWidth is w's width in columns when it is a terminal, else 0.
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return width
}

// table is a go-pretty table on the printer's output that fits tableWidth: when its rows are
// wider, its widest columns wrap (at spaces where they can) until it fits.
func (p printer) table() table.Writer {
	t := table.NewWriter()
	t.SetOutputMirror(p.out)
	t.SetStyle(table.StyleLight)
	// Footers carry counts and messages ("3 of 40", an error): go-pretty would capitalise them.
	t.Style().Format.Footer = text.FormatDefault
	return &fitTable{Writer: t, width: p.tableWidth()}
}

// dropWhenNarrow names t's columns (by header) that may be hidden, least needed first, when the
// table does not fit its width without breaking words: a list is read by its ids, which must
// stay whole to be copied, rather than by every field (-o json has them all). The table says
// which it hid below itself.
func dropWhenNarrow(t table.Writer, headers ...string) {
	if f, ok := t.(*fitTable); ok {
		f.droppable = headers
	}
}

// fitTable records what is appended, to size the columns when it renders.
type fitTable struct {
	table.Writer
	width     int
	rows      []table.Row // header, rows and footers alike
	header    table.Row
	droppable []string
}

func (t *fitTable) AppendHeader(r table.Row, c ...table.RowConfig) {
	t.rows = append(t.rows, r)
	t.header = r
	t.Writer.AppendHeader(r, c...)
}

func (t *fitTable) AppendRow(r table.Row, c ...table.RowConfig) {
	t.rows = append(t.rows, r)
	t.Writer.AppendRow(r, c...)
}

func (t *fitTable) AppendRows(rs []table.Row, c ...table.RowConfig) {
	t.rows = append(t.rows, rs...)
	t.Writer.AppendRows(rs, c...)
}

func (t *fitTable) AppendFooter(r table.Row, c ...table.RowConfig) {
	t.rows = append(t.rows, r)
	t.Writer.AppendFooter(r, c...)
}

func (t *fitTable) Render() string {
	var drop []int
	for _, name := range t.droppable {
		if i := slices.IndexFunc(t.header, func(h any) bool { return fmt.Sprint(h) == name }); i > 0 {
			drop = append(drop, i)
		}
	}
	caps, hidden := fitColumns(t.rows, t.width, drop)
	if caps != nil {
		t.SetColumnConfigs(caps)
	}
	if len(hidden) > 0 {
		names := make([]string, len(hidden))
		for i, c := range hidden {
			names[i] = strings.ToLower(fmt.Sprint(t.header[c]))
		}
		t.SetCaption("%s hidden to fit %d columns (-o json has every field)", strings.Join(names, ", "), t.width)
	}
	return t.Writer.Render()
}

// fitColumns caps the widest columns of rows so the table, drawn with one space of padding and
// a rule between columns, is at most width wide, wrapping their cells at spaces. It tries, in
// turn: wrapping only between words and never the first column (which names the row: an id, a
// metric); breaking words too (no column narrower than 6); then the first column as well (no
// column narrower than 3). Before it breaks a word it hides the columns of drop (indexes, least
// needed first) one by one until the rest fit whole, and returns those it hid. It returns nil
// configurations when the table fits as it is.
func fitColumns(rows []table.Row, width int, drop []int) ([]table.ColumnConfig, []int) {
	var widths, words []int // per column: the widest cell, the longest word
	for _, r := range rows {
		for i, cell := range r {
			if i >= len(widths) {
				widths, words = append(widths, 0), append(words, 0)
			}
			s := fmt.Sprint(cell)
			widths[i] = max(widths[i], text.LongestLineLen(s))
			for _, w := range strings.Fields(s) {
				words[i] = max(words[i], text.StringWidthWithoutEscSequences(w))
			}
		}
	}
	type rule struct {
		wholeWords, firstWhole bool
		least                  int
	}
	hiddenCol := make([]bool, len(widths))
	// capped is column i's width under limit.
	capped := func(i, limit int, r rule) int {
		if hiddenCol[i] {
			return -3 // no cell, no padding, no rule
		}
		if i == 0 && r.firstWhole {
			return widths[0]
		}
		if r.wholeWords {
			limit = max(limit, words[i])
		}
		return min(widths[i], max(limit, r.least))
	}
	drawn := func(limit int, r rule) int {
		total := 1 // the left rule
		for i := range widths {
			total += capped(i, limit, r) + 3 // padding either side and the rule after
		}
		return total
	}
	widest := slices.Max(append([]int{0}, widths...))
	rules := []rule{{true, true, 6}, {false, true, 6}, {false, false, 3}}
	if drawn(widest, rules[0]) <= width {
		return nil, nil
	}
	var hidden []int
	for _, c := range drop {
		if drawn(0, rules[0]) <= width { // every remaining column whole-worded fits
			break
		}
		if c < len(hiddenCol) {
			hiddenCol[c] = true
			hidden = append(hidden, c)
		}
	}
	limit, r := widest, rules[0]
	for _, r = range rules {
		for limit = widest; limit > r.least && drawn(limit, r) > width; limit-- {
		}
		if drawn(limit, r) <= width {
			break
		}
	}
	var caps []table.ColumnConfig
	for i, w := range widths {
		if hiddenCol[i] {
			caps = append(caps, table.ColumnConfig{Number: i + 1, Hidden: true})
		} else if c := capped(i, limit, r); c < w {
			caps = append(caps, table.ColumnConfig{Number: i + 1, WidthMax: c, WidthMaxEnforcer: text.WrapSoft})
		}
	}
	return caps, hidden
}

// human is a value as a table shows it: numbers rounded for people (three significant digits
// at least, thousands grouped, no exponent), nil as "-", anything else as fmt prints it.
// -o json and -o yaml keep the full precision.
func human(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case float64:
		return humanFloat(x)
	case float32:
		return humanFloat(float64(x))
	case int:
		return groupDigits(strconv.Itoa(x))
	case int64:
		return groupDigits(strconv.FormatInt(x, 10))
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return humanFloat(f)
		}
		return x.String()
	}
	return fmt.Sprint(v)
}

func humanFloat(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case math.IsInf(v, 1):
		return "∞"
	case math.IsInf(v, -1):
		return "-∞"
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return groupDigits(strconv.FormatFloat(v, 'f', 0, 64))
	}
	a := math.Abs(v)
	var decimals int
	switch {
	case a >= 100:
		decimals = 0
	case a >= 10:
		decimals = 1
	case a >= 1:
		decimals = 2
	case a >= 1e-6:
		decimals = 2 - int(math.Floor(math.Log10(a))) // three significant digits
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	scale := math.Pow10(decimals)
	v = math.Round(v*scale) / scale // half away from zero, as people round (1.125 is 1.13)
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return groupDigits(s)
}

// groupDigits puts a comma between each three digits of a number's integer part ("67,060.5").
func groupDigits(s string) string {
	sign, digits := "", s
	if strings.HasPrefix(s, "-") {
		sign, digits = "-", s[1:]
	}
	whole, frac, hasFrac := strings.Cut(digits, ".")
	var b strings.Builder
	b.WriteString(sign)
	for i, d := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	if hasFrac {
		b.WriteString("." + frac)
	}
	return b.String()
}
