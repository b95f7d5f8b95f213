package leasedrun

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the job metrics every stage that runs a Pool keeps (the trace-replayer's backends,
// the benchmark-runner): jobs started, finished by outcome, running now, and running jobs failed
// because their runner was lost.
type Metrics struct {
	Started  prometheus.Counter
	Finished *prometheus.CounterVec
	Active   prometheus.Gauge
	Lost     prometheus.Counter
}

// MetricOpts name a stage's job metrics and say what they count; the stage keeps its own names.
type MetricOpts struct {
	Started, Finished, Active, Lost prometheus.Opts
	// FinishedBy is Finished's one label: the outcome it counts by.
	FinishedBy string
}

// NewMetrics makes a stage's job metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer, o MetricOpts) Metrics {
	m := Metrics{
		Started:  prometheus.NewCounter(prometheus.CounterOpts(o.Started)),
		Finished: prometheus.NewCounterVec(prometheus.CounterOpts(o.Finished), []string{o.FinishedBy}),
		Active:   prometheus.NewGauge(prometheus.GaugeOpts(o.Active)),
		Lost:     prometheus.NewCounter(prometheus.CounterOpts(o.Lost)),
	}
	reg.MustRegister(m.Started, m.Finished, m.Active, m.Lost)
	return m
}
