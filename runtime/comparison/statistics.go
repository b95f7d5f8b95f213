package comparison

import (
	"math"
	"strconv"
)

// comparedMetrics are the four metrics of the statistics, in order; throughput_tps is read from
// the stage metrics, the latencies from latency_distributions.<dist>.<stat>_ms.
var comparedMetrics = []struct{ name, distribution string }{
	{"throughput_tps", ""}, {"ttft_ms", "ttft"}, {"tpot_ms", "tpot"}, {"request_latency_ms", "request_latency"},
}

// stats are the statistics of a row, with their key suffixes.
var stats = []struct{ name, suffix string }{{"mean", ""}, {"p90", "_p90"}, {"p99", "_p99"}}

// pair is one matched guide and baseline stage with the row's dimensions.
type pair struct {
	dims            Ordered[any]
	guide, baseline map[string]any // the stages' metrics
}

// MatrixStatistics joins succeeded matrix points on a unique (isl, osl) and their stages on a
// unique concurrency, and aggregates the matched stages; nil when nothing matched. Both sides
// are matrix_results arrays (plain JSON values).
func MatrixStatistics(guide, baseline []any) *Statistics {
	succeeded := func(points []any) []map[string]any {
		var out []map[string]any
		for _, p := range points {
			if m, ok := p.(map[string]any); ok && m["status"] == "succeeded" {
				out = append(out, m)
			}
		}
		return out
	}
	var pairs []pair
	for _, pts := range matched(succeeded(normalizeList(guide)), succeeded(normalizeList(baseline)), "isl", "osl") {
		gStages, _ := pts[0]["stage_metrics"].([]any)
		bStages, _ := pts[1]["stage_metrics"].([]any)
		for _, st := range matched(objects(gStages), objects(bStages), "concurrency") {
			pairs = append(pairs, pair{
				dims:  Ordered[any]{{"isl", pts[0]["isl"]}, {"osl", pts[0]["osl"]}, {"concurrency", st[0]["concurrency"]}, {"num_requests", st[0]["num_requests"]}},
				guide: metricsOf(st[0]), baseline: metricsOf(st[1]),
			})
		}
	}
	return aggregate(pairs, true)
}

// RateStageStatistics joins rate stages on a unique rate (no status filter) and aggregates
// them; nil when nothing matched. Both sides are rate_stage_results arrays.
func RateStageStatistics(guide, baseline []any) *Statistics {
	var pairs []pair
	for _, st := range matched(objects(normalizeList(guide)), objects(normalizeList(baseline)), "rate") {
		pairs = append(pairs, pair{dims: Ordered[any]{{"rate", st[0]["rate"]}, {"duration", st[0]["duration"]}},
			guide: metricsOf(st[0]), baseline: metricsOf(st[1])})
	}
	return aggregate(pairs, false)
}

func normalizeList(v []any) []any {
	out, _ := normalize(v).([]any)
	return out
}

func objects(items []any) []map[string]any {
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		m, _ := it.(map[string]any)
		out = append(out, m) // a non-object has no key and never matches
	}
	return out
}

func metricsOf(stage map[string]any) map[string]any {
	m, _ := stage["metrics"].(map[string]any)
	if m == nil {
		return map[string]any{}
	}
	return m
}

// matched pairs the items of left with those of right whose key (the values of keys, each a
// finite number >= 0) occurs exactly once on each side, in left's order. Missing, negative,
// non-finite, non-numeric or duplicated keys never match; position is never used.
func matched(left, right []map[string]any, keys ...string) [][2]map[string]any {
	type key [2]float64
	keyOf := func(item map[string]any) (key, bool) {
		var k key
		for i, name := range keys {
			v, ok := number(item[name])
			if !ok || v < 0 {
				return k, false
			}
			k[i] = v
		}
		return k, true
	}
	count := func(items []map[string]any) (map[key]int, map[key]map[string]any) {
		n, index := map[key]int{}, map[key]map[string]any{}
		for _, it := range items {
			if k, ok := keyOf(it); ok {
				n[k]++
				index[k] = it
			}
		}
		return n, index
	}
	ln, _ := count(left)
	rn, rindex := count(right)
	var out [][2]map[string]any
	for _, it := range left {
		if k, ok := keyOf(it); ok && ln[k] == 1 && rn[k] == 1 {
			out = append(out, [2]map[string]any{it, rindex[k]})
		}
	}
	return out
}

// metricValues are a stage's four compared metrics for one statistic (absent when not a number).
func metricValues(m map[string]any, stat string) map[string]float64 {
	out := map[string]float64{}
	dists, _ := m["latency_distributions"].(map[string]any)
	for _, cm := range comparedMetrics {
		var v any
		if cm.distribution == "" {
			v = m[cm.name]
		} else if d, ok := dists[cm.distribution].(map[string]any); ok {
			v = d[stat+"_ms"]
		}
		if f, ok := number(v); ok {
			out[cm.name] = f
		}
	}
	return out
}

func aggregate(pairs []pair, matrix bool) *Statistics {
	if len(pairs) == 0 {
		return nil
	}
	ratios := map[string]map[string][]float64{}
	for _, st := range stats {
		ratios[st.suffix] = map[string][]float64{}
	}
	groupDims := []string{"isl", "osl", "concurrency"}
	grouped := map[string]*Ordered[Ordered[[]float64]]{}
	for _, d := range groupDims {
		grouped[d] = &Ordered[Ordered[[]float64]]{}
	}
	var totals [2][2]float64 // [guide, baseline][tokens, duration]
	s := &Statistics{Rows: make([]Row, 0, len(pairs))}
	for _, p := range pairs {
		row := Row{Dimensions: p.dims}
		for _, st := range stats {
			g, b := metricValues(p.guide, st.name), metricValues(p.baseline, st.name)
			gv, bv, rv := Values{}, Values{}, Values{}
			for _, cm := range comparedMetrics {
				if x, ok := g[cm.name]; ok {
					gv = append(gv, Entry[*float64]{cm.name, ptr(round(x, 4))})
				}
				if x, ok := b[cm.name]; ok {
					bv = append(bv, Entry[*float64]{cm.name, ptr(round(x, 4))})
				}
			}
			for _, cm := range comparedMetrics {
				gx, gok := g[cm.name]
				bx, bok := b[cm.name]
				if !gok || !bok || bx == 0 {
					continue
				}
				r := gx / bx
				if !finite(r) {
					continue
				}
				rv = append(rv, Entry[*float64]{cm.name, ptr(round(r, 4))})
				ratios[st.suffix][cm.name] = append(ratios[st.suffix][cm.name], r)
				if matrix && st.suffix == "" {
					for _, d := range groupDims {
						value, _ := p.dims.Get(d)
						addGrouped(grouped[d], groupKey(value), cm.name, r)
					}
				}
			}
			*row.field("guide" + st.suffix), *row.field("baseline" + st.suffix), *row.field("ratio" + st.suffix) = gv, bv, rv
		}
		if matrix {
			// The matrix quirk: the absolutes are the stages' unrounded top-level (p50) fields.
			row.Guide, row.Baseline = topLevel(p.guide), topLevel(p.baseline)
		}
		s.Rows = append(s.Rows, row)
		gt, gtok := number(p.guide["total_output_tokens"])
		gd, gdok := number(p.guide["benchmark_time_seconds"])
		bt, btok := number(p.baseline["total_output_tokens"])
		bd, bdok := number(p.baseline["benchmark_time_seconds"])
		if gtok && gdok && btok && bdok && gt >= 0 && bt >= 0 && gd > 0 && bd > 0 {
			totals[0][0] += gt
			totals[0][1] += gd
			totals[1][0] += bt
			totals[1][1] += bd
		}
	}
	n := len(s.Rows)
	if matrix {
		s.CaseCount = &n
	} else {
		s.StageCount = &n
	}
	s.GeometricMeanRatio = geometricMeans(ratios[""])
	s.GeometricMeanRatioP90 = geometricMeans(ratios["_p90"])
	s.GeometricMeanRatioP99 = geometricMeans(ratios["_p99"])
	if totals[0][1] > 0 && totals[1][1] > 0 {
		g, b := totals[0][0]/totals[0][1], totals[1][0]/totals[1][1]
		if b != 0 {
			s.SuiteNormalizedThroughputRatio = ptr(round(g/b, 5))
		}
	}
	if matrix {
		s.GroupedRatio = &GroupedRatio{ISL: means(*grouped["isl"]), OSL: means(*grouped["osl"]), Concurrency: means(*grouped["concurrency"])}
	}
	return s
}

// addGrouped appends a ratio to group value key's metric; values and, inside each, metrics
// keep their first-seen order across the rows.
func addGrouped(g *Ordered[Ordered[[]float64]], key, metric string, r float64) {
	for i := range *g {
		if (*g)[i].Key == key {
			metrics := &(*g)[i].Value
			rs, _ := metrics.Get(metric)
			metrics.set(metric, append(rs, r))
			return
		}
	}
	*g = append(*g, Entry[Ordered[[]float64]]{key, Ordered[[]float64]{{metric, []float64{r}}}})
}

// means are the arithmetic means of a dimension's grouped ratios, rounded to 4.
func means(g Ordered[Ordered[[]float64]]) Ordered[Values] {
	out := Ordered[Values]{}
	for _, e := range g {
		v := Values{}
		for _, m := range e.Value {
			sum := 0.0
			for _, r := range m.Value {
				sum += r
			}
			v = append(v, Entry[*float64]{m.Key, ptr(round(sum/float64(len(m.Value)), 4))})
		}
		out = append(out, Entry[Values]{e.Key, v})
	}
	return out
}

// groupKey is a dimension value as a group key: integers without a fraction ("128").
func groupKey(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case string:
		return x
	case nil:
		return "None"
	}
	return ""
}

// topLevel are a stage's top-level fields of the four metrics, unrounded, null when not numbers.
func topLevel(m map[string]any) Values {
	v := make(Values, 0, len(comparedMetrics))
	for _, cm := range comparedMetrics {
		var p *float64
		if f, ok := number(m[cm.name]); ok {
			p = &f
		}
		v = append(v, Entry[*float64]{cm.name, p})
	}
	return v
}

// geometricMeans are round(exp(mean(ln r)), 4) per metric over the ratios >= 0; 0.0 when one is
// 0; metrics without ratios are absent.
func geometricMeans(byMetric map[string][]float64) Values {
	out := Values{}
	for _, cm := range comparedMetrics {
		var logs []float64
		zero := false
		for _, r := range byMetric[cm.name] {
			switch {
			case r == 0:
				zero = true
			case r > 0:
				logs = append(logs, math.Log(r))
			}
		}
		switch {
		case zero:
			out = append(out, Entry[*float64]{cm.name, ptr(0.0)})
		case len(logs) > 0:
			sum := 0.0
			for _, l := range logs {
				sum += l
			}
			out = append(out, Entry[*float64]{cm.name, ptr(round(math.Exp(sum/float64(len(logs))), 4))})
		}
	}
	return out
}
