package metrics

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
func Buckets125(maxValue int) []float64 {
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
	NameRunning         = "vllm:num_requests_running"
	NameWaiting         = "vllm:num_requests_waiting"
	NameKVUsage         = "vllm:kv_cache_usage_perc"
	NameCacheConfig     = "vllm:cache_config_info"
	NameLoRAInfo        = "vllm:lora_requests_info"
	NameTTFT            = "vllm:time_to_first_token_seconds"
	NameTPOT            = "vllm:time_per_output_token_seconds"
	NameITL             = "vllm:inter_token_latency_seconds"
	NameReqTPOT         = "vllm:request_time_per_output_token_seconds"
	NameE2E             = "vllm:e2e_request_latency_seconds"
	NameQueue           = "vllm:request_queue_time_seconds"
	NameInference       = "vllm:request_inference_time_seconds"
	NamePrefill         = "vllm:request_prefill_time_seconds"
	NameDecode          = "vllm:request_decode_time_seconds"
	NamePromptTokens    = "vllm:request_prompt_tokens"
	NameGenTokens       = "vllm:request_generation_tokens"
	NameParamsMaxTokens = "vllm:request_params_max_tokens"
	NameMaxGenTokens    = "vllm:max_num_generation_tokens"
	NamePromptTotal     = "vllm:prompt_tokens_total"
	NameGenTotal        = "vllm:generation_tokens_total"
	NameSuccess         = "vllm:request_success_total"
	NamePrefixHits      = "vllm:prefix_cache_hits_total"
	NamePrefixQueries   = "vllm:prefix_cache_queries_total"
	// The engine model's own (--latency-calculator engine), as vLLM names them.
	NamePreemptions     = "vllm:num_preemptions_total"
	NameIterationTokens = "vllm:iteration_tokens_total"
	labelModel          = "model_name"
	labelFinishReason   = "finish_reason"
)

var metricHelp = map[string]string{
	NamePreemptions:     "Cumulative number of preemption from the engine.",
	NameIterationTokens: "Histogram of number of tokens per engine_step.",
	NameRunning:         "Number of requests in model execution batches.",
	NameWaiting:         "Number of requests waiting to be processed.",
	NameKVUsage:         "KV-cache usage. 1 means 100 percent usage.",
	NameCacheConfig:     "Information of the LLMEngine CacheConfig",
	NameLoRAInfo:        "Running stats on lora requests.",
	NameTTFT:            "Histogram of time to first token in seconds.",
	NameTPOT:            "Histogram of time per output token in seconds.",
	NameITL:             "Histogram of inter-token latency in seconds.",
	NameReqTPOT:         "Histogram of time_per_output_token_seconds per request.",
	NameE2E:             "Histogram of e2e request latency in seconds.",
	NameQueue:           "Histogram of time spent in WAITING phase for request.",
	NameInference:       "Histogram of time spent in RUNNING phase for request.",
	NamePrefill:         "Histogram of time spent in PREFILL phase for request.",
	NameDecode:          "Histogram of time spent in DECODE phase for request.",
	NamePromptTokens:    "Number of prefill tokens processed.",
	NameGenTokens:       "Number of generation tokens processed.",
	NameParamsMaxTokens: "Histogram of the max_tokens request parameter.",
	NameMaxGenTokens:    "Histogram of maximum number of requested generation tokens.",
	NamePromptTotal:     "Number of prefill tokens processed.",
	NameGenTotal:        "Number of generation tokens processed.",
	NameSuccess:         "Count of successfully processed requests.",
	NamePrefixHits:      "Prefix cache hits, in terms of number of cached tokens.",
	NamePrefixQueries:   "Prefix cache queries, in terms of number of queried tokens.",
}

// metrics is one rank's vLLM metric set on a private registry.
type Set struct {
	Registry *prometheus.Registry

	Running, Waiting, KVUsage *prometheus.GaugeVec
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
	// Preemptions and IterationTokens exist with the engine model only.
	Preemptions     *prometheus.CounterVec
	IterationTokens *prometheus.HistogramVec

	BaseModel string
	perModel  sync.Map // model name -> *modelMetrics

	lastLoRAInfo atomic.Pointer[string]
	loraInfoMu   sync.Mutex
	loraInfoSets [][3]string // label sets of the kept lora_requests_info series, oldest first
}

// modelMetrics holds the label-resolved series of one model name, so the
// hot path never hashes label values.
type Model struct {
	ttft, tpot, ITL, reqTPOT   prometheus.Observer
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

// metricsSettings are the configuration a rank's metric set depends on.
type Settings struct {
	Model         string // the base model: the first served model name
	MaxModelLen   int    // bounds the token histograms' buckets
	MaxLoRAs      int
	BlockSize     int
	KVCacheSize   int
	EnableKVCache bool // the prefix-cache counters exist only with the KV cache
	EngineModel   bool // the engine's preemptions and tokens per step, and the prefix-cache counters
}

// iterationTokenBuckets are vLLM's buckets of vllm:iteration_tokens_total.
var iterationTokenBuckets = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}

func New(cfg Settings, fake func() *FakeMetrics) *Set {
	m := &Set{Registry: prometheus.NewRegistry(), BaseModel: cfg.Model}
	gauge := func(name string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: metricHelp[name]}, labels)
	}
	hist := func(name string, buckets []float64) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: metricHelp[name], Buckets: buckets}, []string{labelModel})
	}
	counter := func(name string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: metricHelp[name]}, labels)
	}
	tokenBuckets := Buckets125(cfg.MaxModelLen)
	m.Running = gauge(NameRunning, labelModel)
	m.Waiting = gauge(NameWaiting, labelModel)
	m.KVUsage = gauge(NameKVUsage, labelModel)
	m.cacheConfig = gauge(NameCacheConfig, "block_size", "num_gpu_blocks")
	m.loraInfo = gauge(NameLoRAInfo, "max_lora", "running_lora_adapters", "waiting_lora_adapters")
	m.ttft = hist(NameTTFT, ttftBuckets)
	m.tpot = hist(NameTPOT, tpotBuckets)
	m.itl = hist(NameITL, tpotBuckets)
	m.reqTPOT = hist(NameReqTPOT, tpotBuckets)
	m.e2e = hist(NameE2E, requestTimeBuckets)
	m.queue = hist(NameQueue, requestTimeBuckets)
	m.inference = hist(NameInference, requestTimeBuckets)
	m.prefill = hist(NamePrefill, requestTimeBuckets)
	m.decode = hist(NameDecode, requestTimeBuckets)
	m.promptTokens = hist(NamePromptTokens, tokenBuckets)
	m.genTokens = hist(NameGenTokens, tokenBuckets)
	m.paramsMaxTokens = hist(NameParamsMaxTokens, tokenBuckets)
	m.maxGen = hist(NameMaxGenTokens, tokenBuckets)
	m.promptTotal = counter(NamePromptTotal, labelModel)
	m.genTotal = counter(NameGenTotal, labelModel)
	m.success = counter(NameSuccess, labelModel, labelFinishReason)
	m.prefixHits = counter(NamePrefixHits, labelModel)
	m.prefixQueries = counter(NamePrefixQueries, labelModel)

	real := []prometheus.Collector{m.Running, m.Waiting, m.KVUsage, m.cacheConfig, m.loraInfo,
		m.ttft, m.tpot, m.itl, m.reqTPOT, m.e2e, m.queue, m.inference, m.prefill, m.decode,
		m.promptTokens, m.genTokens, m.paramsMaxTokens, m.maxGen, m.promptTotal, m.genTotal, m.success}
	if cfg.EnableKVCache || cfg.EngineModel {
		real = append(real, m.prefixHits, m.prefixQueries)
	}
	if cfg.EngineModel {
		m.Preemptions = counter(NamePreemptions, labelModel)
		m.IterationTokens = hist(NameIterationTokens, iterationTokenBuckets)
		real = append(real, m.Preemptions, m.IterationTokens)
	}
	m.Registry.MustRegister(&switchCollector{real: real, fake: fake, cfg: cfg})

	m.Running.WithLabelValues(m.BaseModel).Set(0)
	m.Waiting.WithLabelValues(m.BaseModel).Set(0)
	m.KVUsage.WithLabelValues(m.BaseModel).Set(0)
	m.cacheConfig.WithLabelValues(strconv.Itoa(cfg.BlockSize), strconv.Itoa(cfg.KVCacheSize)).Set(1)
	m.ForModel(m.BaseModel)
	return m
}

// dropModel deletes the series of an unloaded adapter (never the base
// model's).
func (m *Set) DropModel(name string) {
	if name == m.BaseModel {
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

func (m *Set) ForModel(name string) *Model {
	if v, ok := m.perModel.Load(name); ok {
		return v.(*Model)
	}
	mm := &Model{
		name: name, success: m.success,
		ttft: m.ttft.WithLabelValues(name), tpot: m.tpot.WithLabelValues(name),
		ITL: m.itl.WithLabelValues(name), reqTPOT: m.reqTPOT.WithLabelValues(name),
		e2e: m.e2e.WithLabelValues(name), queue: m.queue.WithLabelValues(name),
		inference: m.inference.WithLabelValues(name), prefill: m.prefill.WithLabelValues(name),
		decode: m.decode.WithLabelValues(name), promptTokens: m.promptTokens.WithLabelValues(name),
		genTokens: m.genTokens.WithLabelValues(name), paramsMaxTokens: m.paramsMaxTokens.WithLabelValues(name),
		maxGen: m.maxGen.WithLabelValues(name), promptTotal: m.promptTotal.WithLabelValues(name),
		genTotal:    m.genTotal.WithLabelValues(name),
		successStop: m.success.WithLabelValues(name, FinishStop), successLength: m.success.WithLabelValues(name, FinishLength),
		prefixHits: m.prefixHits.WithLabelValues(name), prefixQueries: m.prefixQueries.WithLabelValues(name),
	}
	v, _ := m.perModel.LoadOrStore(name, mm)
	return v.(*Model)
}

// setLoRAInfo adds a vllm:lora_requests_info series (value: Unix time) when
// the sets of running or waiting adapters change.
func (m *Set) SetLoRAInfo(maxLoRAs int, running, waiting string) {
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
	if len(m.loraInfoSets) > MaxLoRAInfoSeries {
		old := m.loraInfoSets[0]
		m.loraInfo.DeleteLabelValues(old[0], old[1], old[2])
		m.loraInfoSets = slices.Delete(m.loraInfoSets, 0, 1)
	}
}

// maxLoRAInfoSeries is how many vllm:lora_requests_info series are kept.
const MaxLoRAInfoSeries = 16

// requestStats are the measured timings of one finished sequence.
type Request struct {
	Model          *Model
	Arrival        time.Duration // monotonic offsets, see pacer.Now
	Admitted       time.Duration
	FirstToken     time.Duration
	LastToken      time.Duration
	Finished       time.Duration
	PromptTokens   int
	CachedTokens   int
	GenTokens      int
	MaxTokens      int
	FinishReason   string
	Queued         bool
	KvCacheQueried bool
}

func seconds(d time.Duration) float64 { return d.Seconds() }

// observe records a finished sequence with its measured timings.
func (mm *Model) Observe(s *Request) {
	mm.e2e.Observe(seconds(s.Finished - s.Arrival))
	if s.Queued {
		mm.queue.Observe(seconds(s.Admitted - s.Arrival))
	}
	mm.inference.Observe(seconds(s.Finished - s.Admitted))
	mm.prefill.Observe(seconds(s.FirstToken - s.Admitted))
	mm.ttft.Observe(seconds(s.FirstToken - s.Arrival))
	decode := s.LastToken - s.FirstToken
	mm.decode.Observe(seconds(decode))
	if s.GenTokens > 1 {
		per := seconds(decode) / float64(s.GenTokens-1)
		mm.tpot.Observe(per)
		mm.reqTPOT.Observe(per)
	}
	mm.promptTokens.Observe(float64(s.PromptTokens))
	mm.genTokens.Observe(float64(s.GenTokens))
	mm.maxGen.Observe(float64(s.GenTokens))
	mm.paramsMaxTokens.Observe(float64(s.MaxTokens))
	mm.promptTotal.Add(float64(s.PromptTokens))
	mm.genTotal.Add(float64(s.GenTokens))
	switch s.FinishReason {
	case FinishStop:
		mm.successStop.Inc()
	case FinishLength:
		mm.successLength.Inc()
	default:
		mm.success.WithLabelValues(mm.name, s.FinishReason).Inc()
	}
	if s.KvCacheQueried {
		mm.prefixQueries.Add(float64(s.PromptTokens))
		mm.prefixHits.Add(float64(s.CachedTokens))
	}
}

// switchCollector reports either the real metrics or, while fake metrics
// are configured, only the fake ones (never both, as the specification
// requires). It is unchecked because the set changes at run time.
type switchCollector struct {
	real []prometheus.Collector
	fake func() *FakeMetrics
	cfg  Settings
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

func (fm *FakeMetrics) collect(ch chan<- prometheus.Metric, cfg Settings) {
	model := cfg.Model
	gauge := func(name string, v float64) {
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, metricHelp[name], []string{labelModel}, nil), prometheus.GaugeValue, v, model)
	}
	gauge(NameRunning, fm.RunningRequests)
	gauge(NameWaiting, fm.WaitingRequests)
	gauge(NameKVUsage, fm.KVCacheUsage)
	loraDesc := prometheus.NewDesc(NameLoRAInfo, metricHelp[NameLoRAInfo], []string{"max_lora", "running_lora_adapters", "waiting_lora_adapters"}, nil)
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
	hist(NameTTFT, ttftBuckets, fm.TTFTBucketValues)
	hist(NameTPOT, tpotBuckets, fm.TPOTBucketValues)
	hist(NameE2E, requestTimeBuckets, fm.E2ERLBucketValues)
	hist(NameQueue, requestTimeBuckets, fm.QueueTimeBucketValues)
	hist(NameInference, requestTimeBuckets, fm.InfTimeBucketValues)
	hist(NamePrefill, requestTimeBuckets, fm.PrefillTimeBucketValues)
	hist(NameDecode, requestTimeBuckets, fm.DecodeTimeBucketValues)
	tok := Buckets125(cfg.MaxModelLen)
	hist(NamePromptTokens, tok, fm.RequestPromptTokens)
	hist(NameGenTokens, tok, fm.RequestGenerationTokens)
	hist(NameMaxGenTokens, tok, fm.RequestMaxGenerationTokens)
	hist(NameParamsMaxTokens, tok, fm.RequestParamsMaxTokens)
	counter := func(name string, v *float64) {
		if v != nil {
			ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, metricHelp[name], []string{labelModel}, nil), prometheus.CounterValue, *v, model)
		}
	}
	counter(NamePromptTotal, fm.TotalPromptTokens)
	counter(NameGenTotal, fm.TotalGenerationTokens)
	counter(NamePrefixHits, fm.PrefixCacheHits)
	counter(NamePrefixQueries, fm.PrefixCacheQueries)
	if len(fm.RequestSuccessTotal) > 0 {
		d := prometheus.NewDesc(NameSuccess, metricHelp[NameSuccess], []string{labelModel, labelFinishReason}, nil)
		for reason, n := range fm.RequestSuccessTotal {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(n), model, reason)
		}
	}
}

// The finish reasons whose success counters are resolved once per model (the others are
// looked up by label).
const (
	FinishStop   = "stop"
	FinishLength = "length"
)
