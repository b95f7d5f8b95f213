package inferencesim

import (
	"slices"
	"testing"

	"github.com/lensfn/lensfn/wasm-modules/latency"
)

// The GET /admin/config document keeps its key order and encoding byte for byte.
func TestAdminViewIsByteStable(t *testing.T) {
	ts := startSim(t, "--time-to-first-token", "1500us", "--time-to-first-token-std-dev", "100us",
		"--inter-token-latency", "2ms", "--failure-injection-rate", "5", "--failure-types", "rate_limit",
		"--fake-metrics", `{"running-requests":3}`, "--time-factor-under-load", "1.5")
	_, got := get(t, ts.url()+"/admin/config")
	want := `{"failure-injection-rate":5,"failure-types":["rate_limit"],"latency-calculator":"",` +
		`"time-to-first-token":"1.5ms","time-to-first-token-std-dev":"100µs","inter-token-latency":"2ms",` +
		`"inter-token-latency-std-dev":"0s","kv-cache-transfer-latency":"0s","kv-cache-transfer-latency-std-dev":"0s",` +
		`"prefill-overhead":"0s","prefill-time-per-token":"0s","prefill-time-std-dev":"0s",` +
		`"kv-cache-transfer-time-per-token":"0s","kv-cache-transfer-time-std-dev":"0s","time-factor-under-load":1.5,` +
		`"fake-metrics":{"running-requests":3,"waiting-requests":0,"kv-cache-usage":0,"loras":null,` +
		`"ttft-buckets-values":null,"tpot-buckets-values":null,"e2erl-buckets-values":null,"queue-time-buckets-values":null,` +
		`"inf-time-buckets-values":null,"prefill-time-buckets-values":null,"decode-time-buckets-values":null,` +
		`"request-prompt-tokens":null,"request-generation-tokens":null,"request-max-generation-tokens":null,` +
		`"request-params-max-tokens":null,"request-success-total":null,"total-prompt-tokens":null,` +
		`"total-generation-tokens":null,"prefix-cache-hits":null,"prefix-cache-queries":null}}`
	if got != want {
		t.Fatalf("GET /admin/config:\n got %s\nwant %s", got, want)
	}
}

// Every latency flag of the core is settable at run time: the admin settings derive from
// latency.DurationFlags, so a new flag there needs no second list here.
func TestAdminSettingsCoverEveryLatencyFlag(t *testing.T) {
	for _, f := range latency.DurationFlags {
		if !slices.Contains(adminSettings, f.Name) {
			t.Errorf("%s is not an admin setting", f.Name)
		}
	}
	if !slices.Contains(adminSettings, latency.FactorFlag) {
		t.Errorf("%s is not an admin setting", latency.FactorFlag)
	}
}
