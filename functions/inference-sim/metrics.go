package inferencesim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// vLLM's histogram buckets.
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
		2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	tpotBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0,
		2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	requestTimeBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
		40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
)

// buckets125 is vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, 50, … up to max.
func buckets125(maxValue int) []float64 {
	var out []float64
	for exp := 1; ; exp *= 10 {
		for _, m := range []int{1, 2, 5} {
			v := m * exp
			if v > maxValue {
				return out
			}
			out = append(out, float64(v))
		}
	}
}

// Metric names (vLLM's).
const (
	mRunning          = "vllm:num_requests_running"
	mWaiting          = "vllm:num_requests_waiting"
	mKVUsage          = "vllm:kv_cache_usage_perc"
	mCacheConfig      = "vllm:cache_config_info"
	mLoRAInfo         = "vllm:lora_requests_info"
	mTTFT             = "vllm:time_to_first_token_seconds"
	mTPOT             = "vllm:time_per_output_token_seconds"
	mITL              = "vllm:inter_token_latency_seconds"
	mReqTPOT          = "vllm:request_time_per_output_token_seconds"
	mE2E              = "vllm:e2e_request_latency_seconds"
	mQueue            = "vllm:request_queue_time_seconds"
	mInference        = "vllm:request_inference_time_seconds"
	mPrefill          = "vllm:request_prefill_time_seconds"
	mDecode           = "vllm:request_decode_time_seconds"
	mPromptTokens     = "vllm:request_prompt_tokens"
	mGenTokens        = "vllm:request_generation_tokens"
	mParamsMaxTokens  = "vllm:request_params_max_tokens"
	mMaxGenTokens     = "vllm:max_num_generation_tokens"
	mPromptTotal      = "vllm:prompt_tokens_total"
	mGenTotal         = "vllm:generation_tokens_total"
	mSuccess          = "vllm:request_success_total"
	mPrefixHits       = "vllm:prefix_cache_hits_total"
	mPrefixQueries    = "vllm:prefix_cache_queries_total"
	labelModel        = "model_name"
	labelFinishReason = "finish_reason"
)

var metricHelp = map[string]string{
	mRunning:         "Number of requests in model execution batches.",
	mWaiting:         "Number of requests waiting to be processed.",
	mKVUsage:         "KV-cache usage. 1 means 100 percent usage.",
	mCacheConfig:     "Information of the LLMEngine CacheConfig",
	mLoRAInfo:        "Running stats on lora requests.",
	mTTFT:            "Histogram of time to first token in seconds.",
	mTPOT:            "Histogram of time per output token in seconds.",
	mITL:             "Histogram of inter-token latency in seconds.",
	mReqTPOT:         "Histogram of time_per_output_token_seconds per request.",
	mE2E:             "Histogram of e2e request latency in seconds.",
	mQueue:           "Histogram of time spent in WAITING phase for request.",
	mInference:       "Histogram of time spent in RUNNING phase for request.",
	mPrefill:         "Histogram of time spent in PREFILL phase for request.",
	mDecode:          "Histogram of time spent in DECODE phase for request.",
	mPromptTokens:    "Number of prefill tokens processed.",
	mGenTokens:       "Number of generation tokens processed.",
	mParamsMaxTokens: "Histogram of the max_tokens request parameter.",
	mMaxGenTokens:    "Histogram of maximum number of requested generation tokens.",
	mPromptTotal:     "Number of prefill tokens processed.",
	mGenTotal:        "Number of generation tokens processed.",
	mSuccess:         "Count of successfully processed requests.",
	mPrefixHits:      "Prefix cache hits, in terms of number of cached tokens.",
	mPrefixQueries:   "Prefix cache queries, in terms of number of queried tokens.",
}

// metrics is one rank's vLLM metric set on a private registry.
type metrics struct {
	registry *prometheus.Registry

	running, waiting, kvUsage *prometheus.GaugeVec
	cacheConfig               *prometheus.GaugeVec
	loraInfo                  *prometheus.GaugeVec
	ttft, tpot, itl, reqTPOT  *prometheus.HistogramVec
	e2e, queue, inference     *prometheus.HistogramVec
	prefill, decode           *prometheus.HistogramVec
	promptTokens, genTokens   *prometheus.HistogramVec
	paramsMaxTokens, maxGen   *prometheus.HistogramVec
	promptTotal, genTotal     *prometheus.CounterVec
	success                   *prometheus.CounterVec
	prefixHits, prefixQueries *prometheus.CounterVec

	baseModel string
	perModel  sync.Map // model name -> *modelMetrics

	lastLoRAInfo atomic.Pointer[string]
	loraInfoMu   sync.Mutex
	loraInfoSets [][3]string // label sets of the kept lora_requests_info series, oldest first
}

// modelMetrics holds the label-resolved series of one model name, so the
// hot path never hashes label values.
type modelMetrics struct {
	ttft, tpot, itl, reqTPOT   prometheus.Observer
	e2e, queue, inference      prometheus.Observer
	prefill, decode            prometheus.Observer
	promptTokens, genTokens    prometheus.Observer
	paramsMaxTokens, maxGen    prometheus.Observer
	promptTotal, genTotal      prometheus.Counter
	successStop, successLength prometheus.Counter
	prefixHits, prefixQueries  prometheus.Counter
	success                    *prometheus.CounterVec
	name                       string
}

func newMetrics(cfg *Config, fake func() *FakeMetrics) *metrics {
	m := &metrics{registry: prometheus.NewRegistry(), baseModel: cfg.ServedModelNames[0]}
	gauge := func(name string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: metricHelp[name]}, labels)
	}
	hist := func(name string, buckets []float64) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: metricHelp[name], Buckets: buckets}, []string{labelModel})
	}
	counter := func(name string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: metricHelp[name]}, labels)
	}
	tokenBuckets := buckets125(cfg.MaxModelLen)
	m.running = gauge(mRunning, labelModel)
	m.waiting = gauge(mWaiting, labelModel)
	m.kvUsage = gauge(mKVUsage, labelModel)
	m.cacheConfig = gauge(mCacheConfig, "block_size", "num_gpu_blocks")
	m.loraInfo = gauge(mLoRAInfo, "max_lora", "running_lora_adapters", "waiting_lora_adapters")
	m.ttft = hist(mTTFT, ttftBuckets)
	m.tpot = hist(mTPOT, tpotBuckets)
	m.itl = hist(mITL, tpotBuckets)
	m.reqTPOT = hist(mReqTPOT, tpotBuckets)
	m.e2e = hist(mE2E, requestTimeBuckets)
	m.queue = hist(mQueue, requestTimeBuckets)
	m.inference = hist(mInference, requestTimeBuckets)
	m.prefill = hist(mPrefill, requestTimeBuckets)
	m.decode = hist(mDecode, requestTimeBuckets)
	m.promptTokens = hist(mPromptTokens, tokenBuckets)
	m.genTokens = hist(mGenTokens, tokenBuckets)
	m.paramsMaxTokens = hist(mParamsMaxTokens, tokenBuckets)
	m.maxGen = hist(mMaxGenTokens, tokenBuckets)
	m.promptTotal = counter(mPromptTotal, labelModel)
	m.genTotal = counter(mGenTotal, labelModel)
	m.success = counter(mSuccess, labelModel, labelFinishReason)
	m.prefixHits = counter(mPrefixHits, labelModel)
	m.prefixQueries = counter(mPrefixQueries, labelModel)

	real := []prometheus.Collector{m.running, m.waiting, m.kvUsage, m.cacheConfig, m.loraInfo,
		m.ttft, m.tpot, m.itl, m.reqTPOT, m.e2e, m.queue, m.inference, m.prefill, m.decode,
		m.promptTokens, m.genTokens, m.paramsMaxTokens, m.maxGen, m.promptTotal, m.genTotal, m.success}
	if cfg.EnableKVCache {
		real = append(real, m.prefixHits, m.prefixQueries)
	}
	m.registry.MustRegister(&switchCollector{real: real, fake: fake, cfg: cfg})

	m.running.WithLabelValues(m.baseModel).Set(0)
	m.waiting.WithLabelValues(m.baseModel).Set(0)
	m.kvUsage.WithLabelValues(m.baseModel).Set(0)
	m.cacheConfig.WithLabelValues(strconv.Itoa(cfg.BlockSize), strconv.Itoa(cfg.KVCacheSize)).Set(1)
	m.forModel(m.baseModel)
	return m
}

// dropModel deletes the series of an unloaded adapter (never the base
// model's).
func (m *metrics) dropModel(name string) {
	if name == m.baseModel {
		return
	}
	m.perModel.Delete(name)
	for _, v := range []interface{ DeleteLabelValues(...string) bool }{m.ttft, m.tpot, m.itl, m.reqTPOT, m.e2e,
		m.queue, m.inference, m.prefill, m.decode, m.promptTokens, m.genTokens, m.paramsMaxTokens, m.maxGen,
		m.promptTotal, m.genTotal, m.prefixHits, m.prefixQueries} {
		v.DeleteLabelValues(name)
	}
	m.success.DeletePartialMatch(prometheus.Labels{labelModel: name})
}

func (m *metrics) forModel(name string) *modelMetrics {
	if v, ok := m.perModel.Load(name); ok {
		return v.(*modelMetrics)
	}
	mm := &modelMetrics{
		name: name, success: m.success,
		ttft: m.ttft.WithLabelValues(name), tpot: m.tpot.WithLabelValues(name),
		itl: m.itl.WithLabelValues(name), reqTPOT: m.reqTPOT.WithLabelValues(name),
		e2e: m.e2e.WithLabelValues(name), queue: m.queue.WithLabelValues(name),
		inference: m.inference.WithLabelValues(name), prefill: m.prefill.WithLabelValues(name),
		decode: m.decode.WithLabelValues(name), promptTokens: m.promptTokens.WithLabelValues(name),
		genTokens: m.genTokens.WithLabelValues(name), paramsMaxTokens: m.paramsMaxTokens.WithLabelValues(name),
		maxGen: m.maxGen.WithLabelValues(name), promptTotal: m.promptTotal.WithLabelValues(name),
		genTotal:    m.genTotal.WithLabelValues(name),
		successStop: m.success.WithLabelValues(name, finishStop), successLength: m.success.WithLabelValues(name, finishLength),
		prefixHits: m.prefixHits.WithLabelValues(name), prefixQueries: m.prefixQueries.WithLabelValues(name),
	}
	v, _ := m.perModel.LoadOrStore(name, mm)
	return v.(*modelMetrics)
}

// setLoRAInfo adds a vllm:lora_requests_info series (value: Unix time) when
// the sets of running or waiting adapters change.
func (m *metrics) setLoRAInfo(maxLoRAs int, running, waiting string) {
	key := running + "\x00" + waiting
	if p := m.lastLoRAInfo.Load(); p != nil && *p == key {
		return
	}
	m.lastLoRAInfo.Store(&key)
	labels := [3]string{strconv.Itoa(maxLoRAs), running, waiting}
	m.loraInfo.WithLabelValues(labels[0], labels[1], labels[2]).Set(float64(time.Now().UnixNano()) / 1e9)
	// Every adapter set is a new series; readers take the latest timestamp,
	// so only the most recent few are kept (adapter names are the client's:
	// their combinations must not grow the registry without bound).
	m.loraInfoMu.Lock()
	defer m.loraInfoMu.Unlock()
	if i := slices.Index(m.loraInfoSets, labels); i >= 0 {
		m.loraInfoSets = slices.Delete(m.loraInfoSets, i, i+1)
	}
	m.loraInfoSets = append(m.loraInfoSets, labels)
	if len(m.loraInfoSets) > maxLoRAInfoSeries {
		old := m.loraInfoSets[0]
		m.loraInfo.DeleteLabelValues(old[0], old[1], old[2])
		m.loraInfoSets = slices.Delete(m.loraInfoSets, 0, 1)
	}
}

// maxLoRAInfoSeries is how many vllm:lora_requests_info series are kept.
const maxLoRAInfoSeries = 16

// requestStats are the measured timings of one finished sequence.
type requestStats struct {
	model          *modelMetrics
	arrival        time.Duration // monotonic offsets, see pacer.Now
	admitted       time.Duration
	firstToken     time.Duration
	lastToken      time.Duration
	finished       time.Duration
	promptTokens   int
	cachedTokens   int
	genTokens      int
	maxTokens      int
	finishReason   string
	queued         bool
	kvCacheQueried bool
}

func seconds(d time.Duration) float64 { return d.Seconds() }

// observe records a finished sequence with its measured timings.
func (mm *modelMetrics) observe(s *requestStats) {
	mm.e2e.Observe(seconds(s.finished - s.arrival))
	if s.queued {
		mm.queue.Observe(seconds(s.admitted - s.arrival))
	}
	mm.inference.Observe(seconds(s.finished - s.admitted))
	mm.prefill.Observe(seconds(s.firstToken - s.admitted))
	mm.ttft.Observe(seconds(s.firstToken - s.arrival))
	decode := s.lastToken - s.firstToken
	mm.decode.Observe(seconds(decode))
	if s.genTokens > 1 {
		per := seconds(decode) / float64(s.genTokens-1)
		mm.tpot.Observe(per)
		mm.reqTPOT.Observe(per)
	}
	mm.promptTokens.Observe(float64(s.promptTokens))
	mm.genTokens.Observe(float64(s.genTokens))
	mm.maxGen.Observe(float64(s.genTokens))
	mm.paramsMaxTokens.Observe(float64(s.maxTokens))
	mm.promptTotal.Add(float64(s.promptTokens))
	mm.genTotal.Add(float64(s.genTokens))
	switch s.finishReason {
	case finishStop:
		mm.successStop.Inc()
	case finishLength:
		mm.successLength.Inc()
	default:
		mm.success.WithLabelValues(mm.name, s.finishReason).Inc()
	}
	if s.kvCacheQueried {
		mm.prefixQueries.Add(float64(s.promptTokens))
		mm.prefixHits.Add(float64(s.cachedTokens))
	}
}

// switchCollector reports either the real metrics or, while fake metrics
// are configured, only the fake ones (never both, as the specification
// requires). It is unchecked because the set changes at run time.
type switchCollector struct {
	real []prometheus.Collector
	fake func() *FakeMetrics
	cfg  *Config
}

func (c *switchCollector) Describe(chan<- *prometheus.Desc) {}

func (c *switchCollector) Collect(ch chan<- prometheus.Metric) {
	if fm := c.fake(); fm != nil {
		fm.collect(ch, c.cfg)
		return
	}
	for _, r := range c.real {
		r.Collect(ch)
	}
}

// FakeMetrics is the --fake-metrics document.
type FakeMetrics struct {
	RunningRequests            float64          `json:"running-requests"`
	WaitingRequests            float64          `json:"waiting-requests"`
	KVCacheUsage               float64          `json:"kv-cache-usage"`
	LoRAs                      []FakeLoRA       `json:"loras"`
	TTFTBucketValues           []uint64         `json:"ttft-buckets-values"`
	TPOTBucketValues           []uint64         `json:"tpot-buckets-values"`
	E2ERLBucketValues          []uint64         `json:"e2erl-buckets-values"`
	QueueTimeBucketValues      []uint64         `json:"queue-time-buckets-values"`
	InfTimeBucketValues        []uint64         `json:"inf-time-buckets-values"`
	PrefillTimeBucketValues    []uint64         `json:"prefill-time-buckets-values"`
	DecodeTimeBucketValues     []uint64         `json:"decode-time-buckets-values"`
	RequestPromptTokens        []uint64         `json:"request-prompt-tokens"`
	RequestGenerationTokens    []uint64         `json:"request-generation-tokens"`
	RequestMaxGenerationTokens []uint64         `json:"request-max-generation-tokens"`
	RequestParamsMaxTokens     []uint64         `json:"request-params-max-tokens"`
	RequestSuccessTotal        map[string]int64 `json:"request-success-total"`
	TotalPromptTokens          *float64         `json:"total-prompt-tokens"`
	TotalGenerationTokens      *float64         `json:"total-generation-tokens"`
	PrefixCacheHits            *float64         `json:"prefix-cache-hits"`
	PrefixCacheQueries         *float64         `json:"prefix-cache-queries"`
}

// FakeLoRA is one lora_requests_info series of the fake metrics.
type FakeLoRA struct {
	Running   string  `json:"running"`
	Waiting   string  `json:"waiting"`
	Timestamp float64 `json:"timestamp"`
}

// ParseFakeMetrics decodes and checks a --fake-metrics document.
func ParseFakeMetrics(data []byte) (*FakeMetrics, error) {
	var fm FakeMetrics
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fm); err != nil {
		return nil, fmt.Errorf("invalid fake metrics: %v", err)
	}
	if fm.KVCacheUsage < 0 || fm.KVCacheUsage > 1 {
		return nil, fmt.Errorf("kv-cache-usage must be within [0,1]")
	}
	if fm.RunningRequests < 0 || fm.WaitingRequests < 0 {
		return nil, fmt.Errorf("request counts must not be negative")
	}
	checks := []struct {
		name string
		v    []uint64
		n    int
	}{{"ttft-buckets-values", fm.TTFTBucketValues, len(ttftBuckets) + 1},
		{"tpot-buckets-values", fm.TPOTBucketValues, len(tpotBuckets) + 1},
		{"e2erl-buckets-values", fm.E2ERLBucketValues, len(requestTimeBuckets) + 1},
		{"queue-time-buckets-values", fm.QueueTimeBucketValues, len(requestTimeBuckets) + 1},
		{"inf-time-buckets-values", fm.InfTimeBucketValues, len(requestTimeBuckets) + 1},
		{"prefill-time-buckets-values", fm.PrefillTimeBucketValues, len(requestTimeBuckets) + 1},
		{"decode-time-buckets-values", fm.DecodeTimeBucketValues, len(requestTimeBuckets) + 1}}
	for _, c := range checks {
		if len(c.v) > c.n {
			return nil, fmt.Errorf("%s has %d values, at most %d buckets", c.name, len(c.v), c.n)
		}
	}
	return &fm, nil
}

func (fm *FakeMetrics) collect(ch chan<- prometheus.Metric, cfg *Config) {
	model := cfg.ServedModelNames[0]
	gauge := func(name string, v float64) {
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, metricHelp[name], []string{labelModel}, nil), prometheus.GaugeValue, v, model)
	}
	gauge(mRunning, fm.RunningRequests)
	gauge(mWaiting, fm.WaitingRequests)
	gauge(mKVUsage, fm.KVCacheUsage)
	loraDesc := prometheus.NewDesc(mLoRAInfo, metricHelp[mLoRAInfo], []string{"max_lora", "running_lora_adapters", "waiting_lora_adapters"}, nil)
	for _, l := range fm.LoRAs {
		ch <- prometheus.MustNewConstMetric(loraDesc, prometheus.GaugeValue, l.Timestamp, strconv.Itoa(cfg.MaxLoRAs), l.Running, l.Waiting)
	}
	hist := func(name string, bounds []float64, counts []uint64) {
		if counts == nil {
			return
		}
		cum := make(map[float64]uint64, len(bounds))
		var total uint64
		var sum float64
		for i, b := range bounds {
			if i < len(counts) {
				total += counts[i]
				sum += float64(counts[i]) * b
			}
			cum[b] = total
		}
		if len(counts) > len(bounds) {
			total += counts[len(bounds)]
		}
		ch <- prometheus.MustNewConstHistogram(prometheus.NewDesc(name, metricHelp[name], []string{labelModel}, nil), total, sum, cum, model)
	}
	hist(mTTFT, ttftBuckets, fm.TTFTBucketValues)
	hist(mTPOT, tpotBuckets, fm.TPOTBucketValues)
	hist(mE2E, requestTimeBuckets, fm.E2ERLBucketValues)
	hist(mQueue, requestTimeBuckets, fm.QueueTimeBucketValues)
	hist(mInference, requestTimeBuckets, fm.InfTimeBucketValues)
	hist(mPrefill, requestTimeBuckets, fm.PrefillTimeBucketValues)
	hist(mDecode, requestTimeBuckets, fm.DecodeTimeBucketValues)
	tok := buckets125(cfg.MaxModelLen)
	hist(mPromptTokens, tok, fm.RequestPromptTokens)
	hist(mGenTokens, tok, fm.RequestGenerationTokens)
	hist(mMaxGenTokens, tok, fm.RequestMaxGenerationTokens)
	hist(mParamsMaxTokens, tok, fm.RequestParamsMaxTokens)
	counter := func(name string, v *float64) {
		if v != nil {
			ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, metricHelp[name], []string{labelModel}, nil), prometheus.CounterValue, *v, model)
		}
	}
	counter(mPromptTotal, fm.TotalPromptTokens)
	counter(mGenTotal, fm.TotalGenerationTokens)
	counter(mPrefixHits, fm.PrefixCacheHits)
	counter(mPrefixQueries, fm.PrefixCacheQueries)
	if len(fm.RequestSuccessTotal) > 0 {
		d := prometheus.NewDesc(mSuccess, metricHelp[mSuccess], []string{labelModel, labelFinishReason}, nil)
		for reason, n := range fm.RequestSuccessTotal {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(n), model, reason)
		}
	}
}
