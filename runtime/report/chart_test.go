package report_test

import (
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
