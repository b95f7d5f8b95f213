package report

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Chart is anything a section can show.
type Chart interface {
	SVG() template.HTML
}

// palette is colour-blind safe (Okabe-Ito).
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"}

// Series is one line of a line chart; X and Y have the same length.
type Series struct {
	Name string
	X, Y []float64
}

// LineChart plots series against a shared numeric x axis.
type LineChart struct {
	Title, XLabel, YLabel string
	Series                []Series
	// Step draws each series as a staircase (CDFs, cumulative counts).
	Step bool
}

// BarChart plots one value per labelled bar; negative values hang below a zero line.
type BarChart struct {
	Title, XLabel, YLabel string
	Labels                []string
	Values                []float64
	// Colors per bar (optional; default the first palette colour).
	Colors []string
	// ReferenceLabel, when set, draws a dashed line at Reference with that label (e.g. a
	// ratio's parity line at 1).
	Reference      float64
	ReferenceLabel string
	// Low and High, when set, are each bar's interval, drawn as an error bar (NaN: none).
	Low, High []float64
	// Muted bars (e.g. a change inside its noise) are drawn pale and do not set the value axis:
	// past the range the other bars set they are cut at its edge and marked, so a noisy bar
	// never dominates the chart. Their tooltips keep the full value and interval.
	Muted []bool
}

// at is v[i], or NaN past its end.
func at(v []float64, i int) float64 {
	if i < len(v) {
		return v[i]
	}
	return math.NaN()
}

// Geometry of every chart: a fixed view box scaled by CSS to the page width. Every chart is as
// wide and its plot as high; only the band under the plot grows when a bar chart's labels need
// more than one line (wrapped, or slanted when a word is wider than its bar's slot).
const (
	width, height                      = 640.0, 300.0
	marginL, marginR, marginT, marginB = 64.0, 16.0, 32.0, 48.0
	plotW, plotH                       = width - marginL - marginR, height - marginT - marginB
)

// Text sizes (px, in the view box) and the width of a character at them, estimated for the
// sans-serif faces the pages use (wide enough that a label never runs into the next).
const (
	titleSize, axisSize, tickSize = 13.0, 11.0, 10.0
	charWidth                     = 0.62 // of the font size
)

// textWidth estimates how wide s is at size.
func textWidth(s string, size float64) float64 {
	return float64(utf8.RuneCountInString(s)) * size * charWidth
}

type frame struct {
	b      strings.Builder
	x0, x1 float64
	y0, y1 float64
	// extra is the height added under the plot for labels of more than one line.
	extra float64
}

// newFrame opens a chart; extra is the height added under the plot for its x labels. The text
// carries its own sizes and colours (a page's stylesheet may still restyle the classes), so a
// chart looks the same in the console, a report and a file.
func newFrame(title, xLabel, yLabel string, x0, x1, y0, y1, extra float64) *frame {
	if !(x1 > x0) {
		x1 = x0 + 1
	}
	if !(y1 > y0) {
		y1 = y0 + 1
	}
	f := &frame{x0: x0, x1: x1, y0: y0, y1: y1, extra: extra}
	h := height + extra
	fmt.Fprintf(&f.b, `<svg class="chart" viewBox="0 0 %g %g" width="%g" height="%g" role="img" aria-label="%s" font-family="system-ui,-apple-system,'Segoe UI',Roboto,sans-serif">`,
		width, h, width, h, esc(title))
	fmt.Fprintf(&f.b, `<title>%s</title>`, esc(title))
	fmt.Fprintf(&f.b, `<text x="%g" y="18" class="title" font-size="%g" font-weight="600" fill="#1b1f24">%s</text>`, marginL, titleSize, esc(title))
	fmt.Fprintf(&f.b, `<text x="%g" y="%g" class="axis" font-size="%g" fill="#333" text-anchor="middle">%s</text>`, marginL+plotW/2, h-8, axisSize, esc(xLabel))
	fmt.Fprintf(&f.b, `<text x="14" y="%g" class="axis" font-size="%g" fill="#333" text-anchor="middle" transform="rotate(-90 14 %g)">%s</text>`,
		marginT+plotH/2, axisSize, marginT+plotH/2, esc(yLabel))
	return f
}

func (f *frame) px(x float64) float64 { return marginL + (x-f.x0)/(f.x1-f.x0)*plotW }
func (f *frame) py(y float64) float64 { return marginT + plotH - (y-f.y0)/(f.y1-f.y0)*plotH }

func (f *frame) yAxis() {
	vs, step := ticks(f.y0, f.y1, 5)
	for _, v := range vs {
		y := f.py(v)
		fmt.Fprintf(&f.b, `<line x1="%g" x2="%g" y1="%.1f" y2="%.1f" class="grid" stroke="#eee"/>`, marginL, marginL+plotW, y, y)
		fmt.Fprintf(&f.b, `<text x="%g" y="%.1f" class="tick" font-size="%g" fill="#555" text-anchor="end">%s</text>`, marginL-4, y+4, tickSize, tickText(v, step))
	}
	fmt.Fprintf(&f.b, `<line x1="%g" x2="%g" y1="%g" y2="%g" class="frame" stroke="#999"/>`, marginL, marginL+plotW, marginT+plotH, marginT+plotH)
}

func (f *frame) xAxis() {
	vs, step := ticks(f.x0, f.x1, 6)
	for _, v := range vs {
		x := f.px(v)
		fmt.Fprintf(&f.b, `<text x="%.1f" y="%g" class="tick" font-size="%g" fill="#555" text-anchor="middle">%s</text>`, x, marginT+plotH+16, tickSize, tickText(v, step))
	}
}

func (f *frame) empty() {
	fmt.Fprintf(&f.b, `<text x="%g" y="%g" class="axis" font-size="%g" fill="#333" text-anchor="middle">no data</text>`, marginL+plotW/2, marginT+plotH/2, axisSize)
}

func (f *frame) done() template.HTML {
	f.b.WriteString(`</svg>`)
	return template.HTML(f.b.String()) // every text in it went through esc
}

// SVG renders the chart.
func (c LineChart) SVG() template.HTML {
	x0, x1, y0, y1 := math.Inf(1), math.Inf(-1), 0.0, math.Inf(-1)
	points := 0
	for _, s := range c.Series {
		for i := range min(len(s.X), len(s.Y)) {
			if !finite(s.X[i]) || !finite(s.Y[i]) {
				continue
			}
			x0, x1 = math.Min(x0, s.X[i]), math.Max(x1, s.X[i])
			y0, y1 = math.Min(y0, s.Y[i]), math.Max(y1, s.Y[i])
			points++
		}
	}
	if points == 0 {
		f := newFrame(c.Title, c.XLabel, c.YLabel, 0, 1, 0, 1, 0)
		f.empty()
		return f.done()
	}
	f := newFrame(c.Title, c.XLabel, c.YLabel, x0, x1, y0, niceCeil(y1), 0)
	f.yAxis()
	f.xAxis()
	lx, ly := marginL+8, marginT+12.0
	for i, s := range c.Series {
		var d strings.Builder
		started := false
		for j := range min(len(s.X), len(s.Y)) {
			if !finite(s.X[j]) || !finite(s.Y[j]) {
				continue
			}
			x, y := f.px(s.X[j]), f.py(s.Y[j])
			switch {
			case !started:
				fmt.Fprintf(&d, "M%.1f %.1f", x, y)
				started = true
			case c.Step:
				fmt.Fprintf(&d, "H%.1fV%.1f", x, y)
			default:
				fmt.Fprintf(&d, "L%.1f %.1f", x, y)
			}
		}
		color := palette[i%len(palette)]
		fmt.Fprintf(&f.b, `<path d="%s" fill="none" stroke="%s" stroke-width="2"><title>%s</title></path>`, d.String(), color, esc(s.Name))
		if len(c.Series) > 1 || s.Name != "" {
			// Legend entries follow one another by their width and wrap at the plot's edge.
			w := 14 + textWidth(s.Name, axisSize) + 16
			if lx+w > marginL+plotW && lx > marginL+8 {
				lx, ly = marginL+8, ly+14
			}
			fmt.Fprintf(&f.b, `<rect x="%g" y="%g" width="10" height="10" fill="%s"/><text x="%g" y="%g" class="legend" font-size="%g" fill="#333">%s</text>`,
				lx, ly-9, color, lx+14, ly, axisSize, esc(s.Name))
			lx += w
		}
	}
	return f.done()
}

// SVG renders the chart.
func (c BarChart) SVG() template.HTML {
	n := min(len(c.Labels), len(c.Values))
	muted := func(i int) bool { return i < len(c.Muted) && c.Muted[i] }
	top, bottom := 0.0, 0.0
	allMuted := true
	for i := range n {
		allMuted = allMuted && muted(i)
	}
	for i, v := range c.Values[:n] {
		if muted(i) && !allMuted {
			continue
		}
		for _, x := range []float64{v, at(c.Low, i), at(c.High, i)} {
			if finite(x) && (x == v || !muted(i)) {
				top, bottom = math.Max(top, x), math.Min(bottom, x)
			}
		}
	}
	if c.ReferenceLabel != "" && finite(c.Reference) {
		top, bottom = math.Max(top, c.Reference), math.Min(bottom, c.Reference)
	}
	// A muted bar past that range gets a quarter of it as room, enough to show which way it
	// goes, then is cut.
	span := top - bottom
	for i, v := range c.Values[:n] {
		if muted(i) && !allMuted && finite(v) {
			top, bottom = math.Max(top, math.Min(v, top+span/4)), math.Min(bottom, math.Max(v, bottom-span/4))
		}
	}
	if bottom < 0 {
		bottom = -niceCeil(-bottom) // bars below zero (e.g. a negative change) hang from the zero line
	}
	top = niceCeil(top)
	slot := plotW / float64(max(n, 1))
	labelEvery := max(1, n/12) // at most a dozen labels
	labels := layoutLabels(c.Labels[:n], labelEvery, slot*float64(labelEvery))
	f := newFrame(c.Title, c.XLabel, c.YLabel, 0, float64(max(n, 1)), bottom, top, labels.extra)
	if n == 0 {
		f.empty()
		return f.done()
	}
	f.yAxis()
	if bottom < 0 {
		fmt.Fprintf(&f.b, `<line x1="%g" x2="%g" y1="%.1f" y2="%.1f" class="frame"/>`, marginL, marginL+plotW, f.py(0), f.py(0))
	}
	clip := func(v float64) (float64, bool) {
		switch {
		case v > f.y1:
			return f.y1, true
		case v < f.y0:
			return f.y0, true
		}
		return v, false
	}
	for i := range n {
		v := c.Values[i]
		if !finite(v) {
			v = 0
		}
		color := palette[0]
		if i < len(c.Colors) && c.Colors[i] != "" {
			color = c.Colors[i]
		}
		tip := c.Labels[i] + ": " + Num(c.Values[i])
		lo, hi := at(c.Low, i), at(c.High, i)
		if finite(lo) && finite(hi) {
			tip += " (interval " + Num(lo) + " to " + Num(hi) + ")"
		}
		opacity := ""
		if muted(i) {
			opacity, tip = ` fill-opacity="0.35"`, tip+", inside its noise"
		}
		shown, cut := clip(v)
		x, zero, y := marginL+float64(i)*slot, f.py(0), f.py(shown)
		fmt.Fprintf(&f.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"%s><title>%s</title></rect>`,
			x+slot*0.1, math.Min(y, zero), slot*0.8, math.Abs(zero-y), esc(color), opacity, esc(tip))
		if cut { // a zig-zag across the bar's end says it goes on past the axis
			fmt.Fprintf(&f.b, `<path d="M%.1f %.1fl%.1f -4l%.1f 8l%.1f -4" fill="none" stroke="#fff" stroke-width="2" class="cut"/>`,
				x+slot*0.1, y+math.Copysign(6, zero-y), slot*0.27, slot*0.27, slot*0.26)
		}
		if finite(lo) && finite(hi) {
			l, _ := clip(lo)
			h, _ := clip(hi)
			cx := x + slot/2
			fmt.Fprintf(&f.b, `<path d="M%.1f %.1fV%.1fM%.1f %.1fh%.1fM%.1f %.1fh%.1f" stroke="#000" stroke-width="1.5" fill="none" class="interval"><title>%s</title></path>`,
				cx, f.py(l), f.py(h), cx-slot*0.15, f.py(l), slot*0.3, cx-slot*0.15, f.py(h), slot*0.3, esc(tip))
		}
		if i%labelEvery == 0 {
			labels.draw(&f.b, i, x+slot/2)
		}
	}
	if c.ReferenceLabel != "" && finite(c.Reference) {
		y := f.py(c.Reference)
		fmt.Fprintf(&f.b, `<line x1="%g" x2="%g" y1="%.1f" y2="%.1f" stroke="#000" stroke-dasharray="4 3"/>`, marginL, marginL+plotW, y, y)
		fmt.Fprintf(&f.b, `<text x="%g" y="%.1f" class="legend" font-size="%g" fill="#333" text-anchor="end">%s</text>`, marginL+plotW-2, y-3, axisSize, esc(c.ReferenceLabel))
	}
	return f.done()
}

// barLabels are a bar chart's x labels laid out to fit their slots: each on one line when all
// fit, else wrapped at word boundaries (spaces, underscores, dots, slashes) onto up to three
// lines, else slanted (cut at maxSlanted characters); extra is the height they add under the
// plot.
type barLabels struct {
	lines  [][]string // per label, its lines (wrapped) or its one line (slanted)
	full   []string
	slant  bool
	extra  float64
	bottom float64 // the plot's bottom edge
}

// maxLabelLines and maxSlanted bound a wrapped label's lines and a slanted label's characters;
// slantDegrees is the slant.
const (
	maxLabelLines = 3
	maxSlanted    = 28
	slantDegrees  = 35.0
)

func layoutLabels(labels []string, every int, room float64) barLabels {
	l := barLabels{lines: make([][]string, len(labels)), full: labels, bottom: marginT + plotH}
	limit := room * 0.92
	most := 1
	for i, s := range labels {
		if i%every != 0 {
			continue
		}
		lines, ok := wrapLabel(s, limit)
		if !ok || len(lines) > maxLabelLines {
			l.slant = true
			break
		}
		l.lines[i] = lines
		most = max(most, len(lines))
	}
	if !l.slant {
		l.extra = float64(most-1) * (tickSize + 1)
		return l
	}
	widest := 0.0
	for i, s := range labels {
		if i%every != 0 {
			continue
		}
		if r := []rune(s); len(r) > maxSlanted {
			s = string(r[:maxSlanted-1]) + "…"
		}
		l.lines[i] = []string{s}
		widest = max(widest, textWidth(s, tickSize))
	}
	rad := slantDegrees * math.Pi / 180
	// The slanted labels start under the plot and must end above the axis title.
	l.extra = max(0, math.Ceil(widest*math.Sin(rad)+tickSize*math.Cos(rad)-15))
	return l
}

// wrapLabel breaks s into lines no wider than limit at word boundaries; ok is false when one
// word alone is wider.
func wrapLabel(s string, limit float64) (lines []string, ok bool) {
	if textWidth(s, tickSize) <= limit {
		return []string{s}, true
	}
	var words []string
	start := 0
	for i, r := range s {
		switch r {
		case ' ':
			words, start = append(words, s[start:i]), i+1
		case '_', '.', '/', '-':
			words, start = append(words, s[start:i+1]), i+1
		}
	}
	words = append(words, s[start:])
	line := ""
	for _, w := range words {
		if w == "" {
			continue
		}
		if textWidth(w, tickSize) > limit {
			return nil, false
		}
		joined := w
		if line != "" {
			sep := " "
			if strings.ContainsAny(line[len(line)-1:], "_./-") {
				sep = ""
			}
			joined = line + sep + w
		}
		if line != "" && textWidth(joined, tickSize) > limit {
			lines, line = append(lines, line), w
			continue
		}
		line = joined
	}
	return append(lines, line), true
}

// draw writes label i centred under x (or slanted, ending there).
func (l barLabels) draw(b *strings.Builder, i int, x float64) {
	lines := l.lines[i]
	if len(lines) == 0 {
		return
	}
	title := ""
	if l.slant && lines[0] != l.full[i] {
		title = "<title>" + esc(l.full[i]) + "</title>"
	}
	if l.slant {
		y := l.bottom + 12
		fmt.Fprintf(b, `<text x="%.1f" y="%g" class="tick" font-size="%g" fill="#555" text-anchor="end" transform="rotate(-%g %.1f %g)">%s%s</text>`,
			x+3, y, tickSize, slantDegrees, x+3, y, title, esc(lines[0]))
		return
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%g" class="tick" font-size="%g" fill="#555" text-anchor="middle">`, x, l.bottom+16, tickSize)
	for j, line := range lines {
		dy := 0.0
		if j > 0 {
			dy = tickSize + 1
		}
		fmt.Fprintf(b, `<tspan x="%.1f" dy="%g">%s</tspan>`, x, dy, esc(line))
	}
	b.WriteString(`</text>`)
}

// Histogram counts values into fixed bins over [Min, Max]; memory does not grow with values.
type Histogram struct {
	Min, Max float64
	Counts   []int64
	Total    int64
}

// NewHistogram makes bins equal-width bins over [lo, hi].
func NewHistogram(lo, hi float64, bins int) *Histogram {
	bins = min(max(bins, 1), 1000)
	if !(hi > lo) {
		hi = lo + 1
	}
	return &Histogram{Min: lo, Max: hi, Counts: make([]int64, bins)}
}

// Add counts one value (values outside the range go to the first or last bin).
func (h *Histogram) Add(v float64) {
	if !finite(v) {
		return
	}
	i := int((v - h.Min) / (h.Max - h.Min) * float64(len(h.Counts)))
	h.Counts[min(max(i, 0), len(h.Counts)-1)]++
	h.Total++
}

func (h *Histogram) edge(i int) float64 {
	return h.Min + (h.Max-h.Min)*float64(i)/float64(len(h.Counts))
}

// Bars is the histogram as a bar chart, each bar labelled by its lower edge.
func (h *Histogram) Bars(title, unit string) BarChart {
	c := BarChart{Title: title, XLabel: unit, YLabel: "requests"}
	for i, n := range h.Counts {
		c.Labels = append(c.Labels, Num(h.edge(i)))
		c.Values = append(c.Values, float64(n))
	}
	return c
}

// CDF is the cumulative share of values (0-100 %) at each bin's upper edge, as a step chart.
func (h *Histogram) CDF(title, unit string) LineChart {
	s := Series{X: []float64{h.Min}, Y: []float64{0}}
	var cum int64
	for i, n := range h.Counts {
		cum += n
		s.X = append(s.X, h.edge(i+1))
		s.Y = append(s.Y, 100*float64(cum)/float64(max(h.Total, 1)))
	}
	if h.Total == 0 {
		s = Series{}
	}
	return LineChart{Title: title, XLabel: unit, YLabel: "% of requests at or below", Series: []Series{s}, Step: true}
}

// Level is a confidence level (a fraction) as a percentage, to a hundredth of a per cent
// (0.95 is "95 %", 0.999 is "99.9 %").
func Level(fraction float64) string {
	return strconv.FormatFloat(math.Round(fraction*1e4)/100, 'f', -1, 64) + " %"
}

// Num formats a number for people: at most four significant digits, no exponent for the usual
// range.
func Num(v float64) string {
	switch {
	case !finite(v):
		return "–"
	case v == math.Trunc(v) && math.Abs(v) < 1e9:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// ticks returns about n round values spanning [lo, hi] and their step.
func ticks(lo, hi float64, n int) ([]float64, float64) {
	step := niceStep((hi - lo) / float64(n))
	var out []float64
	for k := math.Ceil(lo / step); len(out) < 2*n+2; k++ {
		v := k * step
		if v > hi+step*1e-9 {
			break
		}
		if math.Abs(v) < step*1e-9 {
			v = 0 // never "-0", nor 1e-17 for a zero
		}
		out = append(out, v)
	}
	return out, step
}

// tickText writes a tick's value with as many decimals as its step needs ("0.5", "1", "1.5",
// never "1.500" or "-0") and thousands and millions short ("12k", "1.5M").
func tickText(v, step float64) string {
	if !finite(v) {
		return "–"
	}
	suffix := ""
	switch a := math.Abs(v); {
	case a >= 1e6 && step >= 1e5:
		v, step, suffix = v/1e6, step/1e6, "M"
	case a >= 1e4 && step >= 1e3:
		v, step, suffix = v/1e3, step/1e3, "k"
	}
	decimals := 0
	if step > 0 && step < 1 {
		decimals = int(math.Ceil(-math.Log10(step) - 1e-9))
		if math.Abs(step*math.Pow(10, float64(decimals))-math.Round(step*math.Pow(10, float64(decimals)))) > 1e-6 {
			decimals++ // a step of 0.25
		}
	}
	out := strconv.FormatFloat(v, 'f', min(decimals, 6), 64)
	if strings.Contains(out, ".") {
		out = strings.TrimRight(strings.TrimRight(out, "0"), ".")
	}
	if strings.Trim(out, "-0.") == "" {
		out = "0"
	}
	return out + suffix
}

func niceStep(raw float64) float64 {
	if !(raw > 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// niceCeil rounds a chart's top up to a round value.
func niceCeil(v float64) float64 {
	if !(v > 0) {
		return 1
	}
	step := niceStep(v / 5)
	return math.Ceil(v/step) * step
}

func esc(s string) string { return template.HTMLEscapeString(s) }
