package inferencerouter

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the router's own, on a private registry served at /metrics.
type metrics struct {
	registry      *prometheus.Registry
	requests      *prometheus.CounterVec   // profile, pool, replica, code
	decisions     *prometheus.CounterVec   // profile, reason
	prefixQueries *prometheus.CounterVec   // profile: requests looked up in a prefix index
	prefixHits    *prometheus.CounterVec   // profile: requests sent where a cached prefix was predicted
	queryBlocks   *prometheus.CounterVec   // profile: blocks looked up
	hitBlocks     *prometheus.CounterVec   // profile: blocks predicted cached on the chosen replica
	upstreamErrs  *prometheus.CounterVec   // pool, replica, kind
	replicaUp     *prometheus.GaugeVec     // pool, replica
	inflight      *prometheus.GaugeVec     // pool, replica
	kvEvents      *prometheus.CounterVec   // replica, type
	indexBlocks   *prometheus.GaugeVec     // index
	addedLatency  *prometheus.HistogramVec // profile
	ownProfile    string                   // the router's profile, whose added-latency series is bound
	ownAdded      prometheus.Observer
}

func newMetrics() *metrics {
	m := &metrics{registry: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "inference_router_requests_total",
		Help: "Requests proxied, by profile, pool, replica and response status."}, []string{"profile", "pool", "replica", "code"})
	m.decisions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "inference_router_routing_decisions_total",
		Help: "Routing decisions by profile and the reason the replica was chosen."}, []string{"profile", "reason"})
	m.prefixQueries = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "inference_router_prefix_queries_total",
		Help: "Requests looked up in a prefix index."}, []string{"profile"})
	m.prefixHits = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "inference_router_prefix_predicted_hits_total",
		Help: "Requests routed to a replica predicted to hold a cached prefix of the prompt."}, []string{"profile"})
	m.queryBlocks = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "inference_router_prefix_query_blocks_total",
		Help: "Prompt blocks looked up in a prefix index."}, []string{"profile"})
	m.hitBlocks = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "inference_router_prefix_predicted_hit_blocks_total",
		Help: "Prompt blocks predicted cached on the chosen replica."}, []string{"profile"})
	m.upstreamErrs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "inference_router_upstream_errors_total",
		Help: "Failed upstream calls: connect (replica marked down), transport, pool (no free connection within --upstream-conn-wait: a 503), or status (5xx answers)."}, []string{"pool", "replica", "kind"})
	m.replicaUp = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "inference_router_replica_up",
		Help: "1 while a replica accepts connections, 0 while it is skipped."}, []string{"pool", "replica"})
	m.inflight = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "inference_router_inflight_requests",
		Help: "Requests in flight on each replica through this router."}, []string{"pool", "replica"})
	m.kvEvents = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "inference_router_kv_events_total",
		Help: "KV events received over ZMQ, by replica (\"unknown\" for an unmatched topic) and type (\"malformed\" for undecodable batches)."}, []string{"replica", "type"})
	m.indexBlocks = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "inference_router_index_blocks",
		Help: "Blocks held in each prefix index (approximate, precise)."}, []string{"index"})
	m.addedLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "inference_router_routing_latency_seconds",
		Help:    "Time from a request's arrival to its upstream request being sent: the router's own share of the latency (prefill leg excluded under pd).",
		Buckets: []float64{5e-6, 10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 50e-3}}, []string{"profile"})
	m.registry.MustRegister(m.requests, m.decisions, m.prefixQueries, m.prefixHits, m.queryBlocks, m.hitBlocks,
		m.upstreamErrs, m.replicaUp, m.inflight, m.kvEvents, m.indexBlocks, m.addedLatency,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// bindReplica resolves the series a replica touches on every request
// (in flight, answered 200 under each profile it serves), so the hot path
// pays no label hashing for them.
func (m *metrics) bindReplica(p *pool, r *replica, profiles ...string) {
	r.inflightGauge = m.inflight.WithLabelValues(p.name, r.base)
	r.answeredOK = make(map[string]prometheus.Counter, len(profiles))
	for _, profile := range profiles {
		r.answeredOK[profile] = m.requests.WithLabelValues(profile, p.name, r.base, "200")
	}
}

// countRequest counts one answer relayed from r.
func (m *metrics) countRequest(r *replica, profile, pool string, status int) {
	if c, ok := r.answeredOK[profile]; ok && status == 200 {
		c.Inc()
		return
	}
	m.requests.WithLabelValues(profile, pool, r.base, strconv.Itoa(status)).Inc()
}

// observeAdded records the router's own latency share of one request.
func (m *metrics) observeAdded(profile string, d time.Duration) {
	if profile == m.ownProfile {
		m.ownAdded.Observe(d.Seconds())
		return
	}
	m.addedLatency.WithLabelValues(profile).Observe(d.Seconds())
}
