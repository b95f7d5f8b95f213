package leasedrun_test

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lensfn/lensfn/runtime/leasedrun"
)

// NewMetrics registers the four job metrics under the stage's names, Finished with its label.
func TestNewMetricsRegistersTheStagesNames(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := leasedrun.NewMetrics(reg, leasedrun.MetricOpts{
		Started: prometheus.Opts{Name: "x_started_total", Help: "s"}, Finished: prometheus.Opts{Name: "x_finished_total", Help: "f"},
		Active: prometheus.Opts{Name: "x_active", Help: "a"}, Lost: prometheus.Opts{Name: "x_lost_total", Help: "l"}, FinishedBy: "outcome"})
	m.Started.Inc()
	m.Finished.WithLabelValues("done").Inc()
	m.Active.Set(2)
	m.Lost.Inc()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
		if f.GetName() == "x_finished_total" {
			labels := f.GetMetric()[0].GetLabel()
			if len(labels) != 1 || labels[0].GetName() != "outcome" || labels[0].GetValue() != "done" {
				t.Errorf("x_finished_total labels %v", labels)
			}
		}
		if f.GetName() == "x_active" && f.GetType().String() != "GAUGE" {
			t.Errorf("x_active is a %v", f.GetType())
		}
	}
	if want := []string{"x_active", "x_finished_total", "x_lost_total", "x_started_total"}; !slices.Equal(names, want) {
		t.Fatalf("registered %v, want %v", names, want)
	}
}
