package benchmarkrunner

import (
	"math"
)

// The derived evidence of a window: the serving gauges' means, the counters' deltas, the
// prefix cache hit rate, and, across the endpoints, how evenly the load spread. Every value is
// computed from samples only; a series without samples is unavailable (null), never 0.

// endpointEvidence is one endpoint's evidence over a window.
type endpointEvidence struct {
	endpoint          servingEndpoint
	samples           int
	queueDepth        *float64 // mean of vllm:num_requests_waiting
	running           *float64 // mean of vllm:num_requests_running
	kvUsage           *float64 // mean of vllm:kv_cache_usage_perc
	hits, queries     *float64 // deltas of the prefix cache counters
	prompt, generated *float64 // deltas of the token counters
	requests          *float64 // delta of vllm:request_success_total
	preemptions       *float64 // delta of vllm:num_preemptions_total
	stepTokens, steps *float64 // deltas of vllm:iteration_tokens_total's sum and count
}

// windowEvidence is a window's evidence across the endpoints.
type windowEvidence struct {
	endpoints []endpointEvidence
	series    map[string]string // series -> available | unavailable (on any endpoint)
	samples   int
}

// summarize computes the evidence of the samples in [from, to], per endpoint and across them.
func summarize(endpoints []servingEndpoint, samples [][]sample, from, to float64) windowEvidence {
	w := windowEvidence{series: map[string]string{}}
	for _, name := range scraped {
		w.series[name] = "unavailable"
	}
	for i, e := range endpoints {
		var window []sample
		if i < len(samples) {
			for _, s := range samples[i] {
				if s.at >= from && s.at <= to {
					window = append(window, s)
				}
			}
		}
		ee := endpointEvidence{endpoint: e, samples: len(window)}
		w.samples += len(window)
		ee.queueDepth = meanOf(window, seriesWaiting)
		ee.running = meanOf(window, seriesRunning)
		ee.kvUsage = meanOf(window, seriesKVUsage)
		ee.hits = deltaOf(window, seriesPrefixHits)
		ee.queries = deltaOf(window, seriesPrefixQueries)
		ee.prompt = deltaOf(window, seriesPromptTokens)
		ee.generated = deltaOf(window, seriesGenTokens)
		ee.requests = deltaOf(window, seriesRequests)
		ee.preemptions = deltaOf(window, seriesPreemptions)
		ee.stepTokens = deltaOf(window, seriesIterTokensSum)
		ee.steps = deltaOf(window, seriesIterTokensCount)
		for _, name := range scraped {
			for _, s := range window {
				if _, ok := s.values[name]; ok {
					w.series[name] = "available"
					break
				}
			}
		}
		w.endpoints = append(w.endpoints, ee)
	}
	return w
}

// meanOf is the mean of a series over the samples that have it; nil when none has.
func meanOf(window []sample, name string) *float64 {
	sum, n := 0.0, 0
	for _, s := range window {
		if v, ok := s.values[name]; ok {
			sum += v
			n++
		}
	}
	if n == 0 {
		return nil
	}
	v := sum / float64(n)
	return &v
}

// deltaOf is a counter's increase from its first to its last sample in the window (a reset
// counts from zero again); nil when no sample has it.
func deltaOf(window []sample, name string) *float64 {
	total, prev, seen := 0.0, 0.0, false
	for _, s := range window {
		v, ok := s.values[name]
		if !ok {
			continue
		}
		switch {
		case !seen:
		case v >= prev:
			total += v - prev
		default: // the endpoint restarted: its counter began again at 0
			total += v
		}
		prev, seen = v, true
	}
	if !seen {
		return nil
	}
	return &total
}

// sumOf adds the values; nil when any is missing (a total over part of the fleet would
// understate it).
func sumOf(values []*float64) *float64 {
	if len(values) == 0 {
		return nil
	}
	total := 0.0
	for _, v := range values {
		if v == nil {
			return nil
		}
		total += *v
	}
	return &total
}

// hitRate is prefix cache hits / queries; nil without queries.
func hitRate(hits, queries *float64) *float64 {
	if hits == nil || queries == nil || *queries <= 0 {
		return nil
	}
	v := *hits / *queries
	return &v
}

// coefficientOfVariation is the population standard deviation of loads over their mean: 0 when
// every endpoint carried the same load. Nil with fewer than two loads, a missing one, or no load.
func coefficientOfVariation(loads []*float64) *float64 {
	if len(loads) < 2 {
		return nil
	}
	mean := sumOf(loads)
	if mean == nil {
		return nil
	}
	m := *mean / float64(len(loads))
	if m <= 0 {
		return nil
	}
	variance := 0.0
	for _, v := range loads {
		variance += (*v - m) * (*v - m)
	}
	cv := math.Sqrt(variance/float64(len(loads))) / m
	return &cv
}

// shares are each value's fraction of their total; nil entries when the total is unknown or 0.
func shares(values []*float64) []*float64 {
	out := make([]*float64, len(values))
	total := sumOf(values)
	if total == nil || *total <= 0 {
		return out
	}
	for i, v := range values {
		s := *v / *total
		out[i] = &s
	}
	return out
}

func tokensOf(e endpointEvidence) *float64 { return sumOf([]*float64{e.prompt, e.generated}) }

// metrics are the evidence keys a run's (or a stage's) metrics carry: fleet totals of the
// queue and running means (the means add up across endpoints), the mean KV-cache usage, the
// prefix cache hit rate over the summed counters, and with several endpoints the token load's
// coefficient of variation and each endpoint's share of the requests.
func (w windowEvidence) metrics() map[string]any {
	n := len(w.endpoints)
	queue, running, kv := make([]*float64, n), make([]*float64, n), make([]*float64, n)
	hits, queries, tokens, requests := make([]*float64, n), make([]*float64, n), make([]*float64, n), make([]*float64, n)
	preemptions, stepTokens, steps := make([]*float64, n), make([]*float64, n), make([]*float64, n)
	for i, e := range w.endpoints {
		queue[i], running[i], kv[i] = e.queueDepth, e.running, e.kvUsage
		hits[i], queries[i], tokens[i], requests[i] = e.hits, e.queries, tokensOf(e), e.requests
		preemptions[i], stepTokens[i], steps[i] = e.preemptions, e.stepTokens, e.steps
	}
	kvMean := sumOf(kv)
	if kvMean != nil {
		*kvMean /= float64(n)
	}
	out := map[string]any{
		"queue_depth":           rounded(sumOf(queue)),
		"running_requests":      rounded(sumOf(running)),
		"kv_cache_usage":        rounded(kvMean),
		"prefix_cache_hit_rate": rounded(hitRate(sumOf(hits), sumOf(queries))),
		"token_load_cv":         rounded(coefficientOfVariation(tokens)),
		"preemptions":           rounded(sumOf(preemptions)),
		"tokens_per_step":       rounded(hitRate(sumOf(stepTokens), sumOf(steps))), // a ratio of deltas, as the hit rate is
	}
	// The mechanisms behind a latency difference, each a number a comparison sets side by
	// side (mechanism_delta_percent) and names (comparison's drivers): queueing (waiting
	// requests), batch size (running requests per endpoint, tokens per step), preemptions and
	// prefix-cache hits.
	var perEndpointRunning any
	if r := sumOf(running); r != nil && n > 0 {
		perEndpointRunning = round3(*r / float64(n))
	}
	mech := map[string]any{}
	for k, v := range map[string]any{"queue_depth": out["queue_depth"], "running_requests_per_endpoint": perEndpointRunning,
		"tokens_per_step": out["tokens_per_step"], "preemptions": out["preemptions"],
		"prefix_cache_hit_rate": out["prefix_cache_hit_rate"], "kv_cache_usage": out["kv_cache_usage"]} {
		if v != nil { // an unavailable series is left out, never 0
			mech[k] = v
		}
	}
	out["mechanism_metrics"] = mech
	requestShare, tokenShare := shares(requests), shares(tokens)
	perEndpoint := make([]map[string]any, n)
	distribution := map[string]any{}
	for i, e := range w.endpoints {
		perEndpoint[i] = map[string]any{"endpoint": e.endpoint.base, "instance": e.endpoint.instance, "samples": e.samples,
			"queue_depth": rounded(e.queueDepth), "running_requests": rounded(e.running), "kv_cache_usage": rounded(e.kvUsage),
			"prefix_cache_hit_rate": rounded(hitRate(e.hits, e.queries)), "prompt_tokens": rounded(e.prompt),
			"generation_tokens": rounded(e.generated), "requests": rounded(e.requests),
			"request_share": rounded(requestShare[i]), "token_share": rounded(tokenShare[i])}
		distribution[e.endpoint.instance] = rounded(requestShare[i])
	}
	out["per_endpoint"] = perEndpoint
	out["request_destination_distribution"] = distribution
	return out
}

// observability is the window's availability summary: status says whether any sample was
// recorded, flow_status whether request or token samples show serving traffic.
func (w windowEvidence) observability() map[string]any {
	status := "unavailable"
	if w.samples > 0 {
		status = "available"
	}
	obs := map[string]any{"status": status, "samples": w.samples, "series": w.series}
	flow := false
	for _, e := range w.endpoints {
		for _, v := range []*float64{e.generated, e.prompt, e.requests} {
			if v != nil && *v > 0 {
				flow = true
			}
		}
	}
	if flow {
		obs["flow_status"], obs["flow_reason"] = "available", nil
	} else {
		obs["flow_status"], obs["flow_reason"] = "unavailable", flowReason
	}
	return obs
}

// rounded is v to 3 places, or nil (JSON null) when unavailable.
func rounded(v *float64) any {
	if v == nil {
		return nil
	}
	return round3(*v)
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
