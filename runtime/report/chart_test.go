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
