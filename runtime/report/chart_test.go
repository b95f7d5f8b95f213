package report_test

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/report"
)

func TestHistogramCountsAndCDFReachesHundred(t *testing.T) {
	h := report.NewHistogram(0, 10, 10)
	for _, v := range []float64{0, 1.5, 1.7, 9.99, 10, 42, -3} {
		h.Add(v)
	}
	if h.Total != 7 || h.Counts[0] != 2 || h.Counts[1] != 2 || h.Counts[9] != 3 {
		t.Fatalf("%+v", h)
	}
	cdf := h.CDF("c", "ms").Series[0]
	if cdf.Y[len(cdf.Y)-1] != 100 || cdf.Y[0] != 0 || cdf.X[len(cdf.X)-1] != 10 {
		t.Fatalf("%+v", cdf)
	}
}

func TestChartsEscapeTextAndDrawEmptyData(t *testing.T) {
	svg := string(report.LineChart{Title: "a<b", Series: []report.Series{{Name: "s&t", X: []float64{0, 1}, Y: []float64{2, 3}}}}.SVG())
	if !strings.Contains(svg, "a&lt;b") || !strings.Contains(svg, "s&amp;t") || !strings.Contains(svg, "<path d=\"M") {
		t.Fatal(svg)
	}
	empty := string(report.BarChart{Title: "none"}.SVG())
	if !strings.Contains(empty, "no data") || !strings.HasSuffix(empty, "</svg>") {
		t.Fatal(empty)
	}
}

func TestBarChartDrawsNegativeBarsAndAReferenceLine(t *testing.T) {
	svg := string(report.BarChart{Title: "change", Labels: []string{"up", "down"}, Values: []float64{50, -25},
		ReferenceLabel: "parity", Reference: 10}.SVG())
	rects := regexp.MustCompile(`<rect x="[^"]+" y="([^"]+)" width="[^"]+" height="([^"]+)"`).FindAllStringSubmatch(svg, -1)
	if len(rects) != 2 {
		t.Fatalf("%d bars: %s", len(rects), svg)
	}
	upY, _ := strconv.ParseFloat(rects[0][1], 64)
	upH, _ := strconv.ParseFloat(rects[0][2], 64)
	downY, _ := strconv.ParseFloat(rects[1][1], 64)
	downH, _ := strconv.ParseFloat(rects[1][2], 64)
	if upH <= 0 || downH <= 0 || math.Abs(upY+upH-downY) > 0.15 || math.Abs(upH-2*downH) > 0.3 {
		t.Errorf("the bars do not meet at zero with heights 2:1: up y=%v h=%v, down y=%v h=%v", upY, upH, downY, downH)
	}
	if !strings.Contains(svg, `stroke-dasharray="4 3"`) || !strings.Contains(svg, ">parity</text>") {
		t.Errorf("no reference line: %s", svg)
	}
}

// A bar inside its noise (muted) does not set the axis: an ITL change of +100 % with an interval
// of -80 to 400 % beside a significant TTFT change of -50 % (interval -55 to -45) gets a quarter
// of the range as room and is cut there, drawn pale; the significant bar keeps most of the
// height and both have error bars.
func TestMutedBarsDoNotDominate(t *testing.T) {
	svg := string(report.BarChart{Title: "change", Labels: []string{"TTFT", "ITL"}, Values: []float64{-50, 100},
		Low: []float64{-55, -80}, High: []float64{-45, 400}, Muted: []bool{false, true}}.SVG())
	rects := regexp.MustCompile(`<rect x="[^"]+" y="[^"]+" width="[^"]+" height="([^"]+)"`).FindAllStringSubmatch(svg, -1)
	if len(rects) != 2 {
		t.Fatalf("%d bars: %s", len(rects), svg)
	}
	ttft, _ := strconv.ParseFloat(rects[0][1], 64)
	itl, _ := strconv.ParseFloat(rects[1][1], 64)
	if itl <= 0 || itl > ttft/2 {
		t.Errorf("the muted ITL bar is %.1f high beside the significant TTFT bar's %.1f", itl, ttft)
	}
	if strings.Count(svg, `class="interval"`) != 2 || !strings.Contains(svg, `fill-opacity="0.35"`) || strings.Count(svg, `class="cut"`) != 1 ||
		!strings.Contains(svg, "ITL: 100 (interval -80 to 400), inside its noise") {
		t.Errorf("intervals, pale or cut bar missing: %s", svg)
	}
	// Without significant bars the muted ones set the range themselves (their intervals do not).
	all := string(report.BarChart{Title: "change", Labels: []string{"a", "b"}, Values: []float64{10, -5},
		Low: []float64{-300, -9}, High: []float64{300, 1}, Muted: []bool{true, true}}.SVG())
	if strings.Contains(all, `>300<`) || strings.Contains(all, `>-300<`) || strings.Count(all, `class="cut"`) != 0 {
		t.Errorf("the muted intervals set the axis: %s", all)
	}
}

// Tick labels carry the decimals their step needs: no "-0", no "1.500", thousands short.
func TestTickLabelsAreRound(t *testing.T) {
	svg := string(report.BarChart{Title: "change", Labels: []string{"a", "b"}, Values: []float64{-0.3, 1.4}}.SVG())
	ticks := regexp.MustCompile(`class="tick"[^>]*>([^<]*)<`).FindAllStringSubmatch(svg, -1)
	var got []string
	for _, m := range ticks {
		got = append(got, m[1])
	}
	joined := strings.Join(got, " ")
	if strings.Contains(" "+joined+" ", " -0 ") || strings.Contains(joined, "-0.0 ") || strings.Contains(joined, "0.500") ||
		!strings.Contains(" "+joined+" ", " 0 ") || !strings.Contains(" "+joined+" ", " 0.5 ") {
		t.Errorf("tick labels %q", joined)
	}
	big := string(report.LineChart{Title: "t", Series: []report.Series{{X: []float64{0, 1}, Y: []float64{0, 48000}}}}.SVG())
	if !strings.Contains(big, ">40k<") || strings.Contains(big, ">40000<") {
		t.Errorf("thousands not short: %s", big)
	}
}

// Bar labels never run into each other: each line of a wrapped label fits its bar's slot, labels
// with a word wider than the slot are slanted, and the chart grows under its plot only for them.
func TestBarLabelsFitTheirSlots(t *testing.T) {
	labels := []string{"throughput_tps", "input_throughput_tps", "throughput_rps", "ttft_ms", "request_latency_ms", "error_rate"}
	svg := string(report.BarChart{Title: "change", XLabel: "metric", Labels: labels, Values: make([]float64, len(labels))}.SVG())
	slot := 560.0 / float64(len(labels))
	lines := regexp.MustCompile(`<tspan[^>]*>([^<]*)</tspan>`).FindAllStringSubmatch(svg, -1)
	if len(lines) <= len(labels) {
		t.Fatalf("the long labels are not wrapped: %s", svg)
	}
	for _, l := range lines {
		if w := float64(len([]rune(l[1]))) * 10 * 0.62; w > slot {
			t.Errorf("the label line %q is %.0f wide in a %.0f slot", l[1], w, slot)
		}
	}
	if !strings.Contains(svg, `viewBox="0 0 640 322"`) || !strings.Contains(svg, ">input_</tspan>") {
		t.Errorf("three-line labels should add 22 under the plot: %s", svg)
	}
	// A dozen metrics (the comparison report's headline) leave a slot narrower than "throughput":
	// they slant, the longest cut.
	many := []string{"throughput", "input throughput", "requests/s", "TTFT", "ITL", "TPOT", "latency", "error rate",
		"max stable QPS", "SLO goodput", "prefix cache hit rate at the end of the run", "token load CV"}
	slanted := string(report.BarChart{Title: "x", Labels: many, Values: make([]float64, len(many))}.SVG())
	if strings.Count(slanted, "rotate(-35") != len(many) || strings.Contains(slanted, `viewBox="0 0 640 300"`) || !strings.Contains(slanted, "…") {
		t.Errorf("long labels not slanted and cut: %s", slanted)
	}
	// Short labels stay on one line, and the chart keeps its size.
	short := string(report.BarChart{Title: "x", Labels: []string{"200", "503"}, Values: []float64{3, 1}}.SVG())
	if strings.Count(short, "<tspan") != 2 || !strings.Contains(short, `viewBox="0 0 640 300"`) {
		t.Errorf("short labels: %s", short)
	}
}
