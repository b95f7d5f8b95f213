package fn

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/state"
)

// Metrics are the runtime's own series, registered on the function's private registry.
type Metrics struct {
	Registry         *prometheus.Registry
	requests         *prometheus.CounterVec
	requestDuration  *prometheus.HistogramVec
	eventsReceived   *prometheus.CounterVec
	eventsSent       *prometheus.CounterVec
	storeOperations  *prometheus.CounterVec
	storeOpsDuration *prometheus.HistogramVec
}

func newMetrics(function string) *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	constLabels := prometheus.Labels{"function": function}
	m := &Metrics{
		Registry: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lens_http_requests_total",
			Help: "HTTP requests served, by route pattern, method and status code.", ConstLabels: constLabels},
			[]string{"route", "method", "code"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lens_http_request_duration_seconds",
			Help: "HTTP request latency by route pattern and method.", ConstLabels: constLabels,
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}},
			[]string{"route", "method"}),
		eventsReceived: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lens_events_received_total",
			Help: "CloudEvents received, by type and outcome (handled, duplicate, busy, rejected, failed).", ConstLabels: constLabels},
			[]string{"type", "outcome"}),
		eventsSent: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lens_events_sent_total",
			Help: "CloudEvents sent to the sink, by type and outcome (ok, rejected, error).", ConstLabels: constLabels},
			[]string{"type", "outcome"}),
		storeOperations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lens_store_operations_total",
			Help: "State store operations, by operation and outcome (ok, error).", ConstLabels: constLabels},
			[]string{"op", "outcome"}),
		storeOpsDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lens_store_operation_duration_seconds",
			Help: "State store operation latency by operation.", ConstLabels: constLabels,
			Buckets: []float64{.0002, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1}},
			[]string{"op"}),
	}
	reg.MustRegister(m.requests, m.requestDuration, m.eventsReceived, m.eventsSent, m.storeOperations, m.storeOpsDuration)
	return m
}

func (m *Metrics) observeStore(op string, d time.Duration, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.storeOperations.WithLabelValues(op, outcome).Inc()
	m.storeOpsDuration.WithLabelValues(op).Observe(d.Seconds())
}

func (m *Metrics) observeReceived(eventType, outcome string) {
	if eventType == "" {
		eventType = "malformed"
	}
	m.eventsReceived.WithLabelValues(eventType, outcome).Inc()
}

func (m *Metrics) observeSent(eventType, outcome string) {
	m.eventsSent.WithLabelValues(eventType, outcome).Inc()
}

func (m *Metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Flush keeps streaming responses (artifact downloads, SSE) streaming through the recorder.
func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// errorSlot carries a handler's error from Handle back to instrument, which logs server errors
// (their detail never reaches the client).
type errorSlot struct{ err error }

type errorSlotKey struct{}

// instrument counts requests by the ServeMux pattern that matched, so ids in paths do not
// explode label cardinality, and logs every 5xx with its cause and request id.
func (m *Metrics) instrument(log *Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		slot := &errorSlot{}
		r = r.WithContext(context.WithValue(r.Context(), errorSlotKey{}, slot))
		next.ServeHTTP(rec, r)
		if rec.status >= 500 && slot.err != nil && !errors.Is(slot.err, state.ErrUnavailable) { // outages: logged once, by storeHealth
			log.Errorw("request failed", "route", r.Pattern, "method", r.Method, "status", rec.status,
				"requestId", problem.RequestID(r.Context()), "error", slot.err)
		}
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		m.requests.WithLabelValues(route, r.Method, strconv.Itoa(rec.status)).Inc()
		m.requestDuration.WithLabelValues(route, r.Method).Observe(time.Since(start).Seconds())
	})
}
