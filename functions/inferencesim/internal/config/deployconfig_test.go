package config

import (
	"maps"
	"slices"
	"testing"

	"github.com/lensfn/lensfn/runtime/deployconfig"
)

// The deployer checks a configuration's simulator flags against deployconfig's table; this
// test keeps that table equal to the flags the simulator really parses.
func TestFlagTableMatchesDeployconfig(t *testing.T) {
	ours := map[string]bool{}
	for _, f := range flagTable {
		ours[f.name] = true
		kind, ok := deployconfig.SimulatorFlags[f.name]
		if !ok {
			t.Errorf("deployconfig.SimulatorFlags lacks --%s", f.name)
			continue
		}
		switch {
		case f.bool_ && kind != deployconfig.FlagBool:
			t.Errorf("--%s is a switch, deployconfig says %s", f.name, kind)
		case f.multi && kind != deployconfig.FlagList && kind != deployconfig.FlagJSON:
			t.Errorf("--%s takes several values, deployconfig says %s", f.name, kind)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(deployconfig.SimulatorFlags)) {
		if !ours[name] {
			t.Errorf("deployconfig.SimulatorFlags has --%s, which the simulator does not parse", name)
		}
	}
}

// A configuration the deployer accepts renders a command line the simulator accepts.
func TestDeployconfigArgsParse(t *testing.T) {
	d, err := deployconfig.Parse(deployconfig.ProviderOptimizedBaseline, []byte(`{"model":{"name":"m"},"decode":{"replicas":2,"max_num_seqs":8,"max_model_len":4096},
		"simulator":{"latency-calculator":"per-token","prefill-time-per-token":"0.2ms","inter-token-latency":"2ms","block-size":16,
		"enable-kvcache":true,"failure-types":["rate_limit"],"failure-injection-rate":0,"time-factor-under-load":1.5}}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse(append(d.Content.ReplicaArgs(), "--port", "0"), Environment{}, nil)
	if err != nil {
		t.Fatalf("the simulator refuses %q: %v", d.Content.ReplicaArgs(), err)
	}
	if cfg.MaxNumSeqs != 8 || cfg.BlockSize != 16 || !cfg.EnableKVCache {
		t.Fatalf("flags not applied: %+v", cfg)
	}
}
