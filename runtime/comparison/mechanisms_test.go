package comparison

import (
	"strings"
	"testing"
)

func TestMechanismsNameWhatDiffers(t *testing.T) {
	// A max_num_seqs 16 guide against a 128 baseline at the same load: the guide queues, runs
	// smaller batches; the cache and preemptions do not differ.
	guide := map[string]any{"queue_depth": 35.2, "running_requests_per_endpoint": 16.0, "tokens_per_step": 17.5,
		"preemptions": 0.0, "prefix_cache_hit_rate": 0.91}
	baseline := map[string]any{"queue_depth": 0.1, "running_requests_per_endpoint": 51.0, "tokens_per_step": 55.0,
		"preemptions": 0.0, "prefix_cache_hit_rate": 0.90}
	got := mechanisms(guide, baseline)
	var names []string
	for _, m := range got {
		names = append(names, m.Mechanism+"/"+m.Metric)
	}
	want := "queueing/queue_depth,batch size/running_requests_per_endpoint,batch size/tokens_per_step"
	if strings.Join(names, ",") != want {
		t.Fatalf("mechanisms %v, want %s", names, want)
	}
	if got[0].Guide != 35.2 || got[0].Baseline != 0.1 || !strings.Contains(got[0].Says, "35.2 waiting") {
		t.Errorf("queueing: %+v", got[0])
	}
	// Preemptions on one side, and a cache that hits far more on the other.
	got = mechanisms(map[string]any{"preemptions": 12.0, "prefix_cache_hit_rate": 0.2}, map[string]any{"preemptions": 0.0, "prefix_cache_hit_rate": 0.8})
	if len(got) != 2 || got[0].Mechanism != "preemptions" || got[1].Mechanism != "cache hits" {
		t.Errorf("%+v", got)
	}
	// Identical evidence, or none: nothing to name.
	if got := mechanisms(guide, guide); len(got) != 0 {
		t.Errorf("identical runs: %+v", got)
	}
	if got := mechanisms(nil, baseline); len(got) != 0 {
		t.Errorf("no guide evidence: %+v", got)
	}
}
