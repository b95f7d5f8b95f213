package inventoryapi_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/inventoryapi"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
)

func TestLoadConfig(t *testing.T) {
	cfg, err := inventoryapi.LoadConfig(fntest.Config(t, fntest.Env(t, nil)))
	if err != nil || cfg.ProbeInterval != 10*time.Second || cfg.ProbeTimeout != 5*time.Second {
		t.Fatalf("defaults %+v, %v", cfg, err)
	}
	cfg, err = inventoryapi.LoadConfig(fntest.Config(t, fntest.Env(t, map[string]string{
		"LENS_MEMBER_PROBE_INTERVAL": "250ms", "LENS_ENDPOINT_PROBE_TIMEOUT": "2s"})))
	if err != nil || cfg.ProbeInterval != 250*time.Millisecond || cfg.ProbeTimeout != 2*time.Second {
		t.Fatalf("set %+v, %v", cfg, err)
	}
	for env, want := range map[string]string{
		"LENS_MEMBER_PROBE_INTERVAL=1ms":   "LENS_MEMBER_PROBE_INTERVAL=1ms is not a duration from 10ms to 1h",
		"LENS_ENDPOINT_PROBE_TIMEOUT=2h":   "LENS_ENDPOINT_PROBE_TIMEOUT=2h0m0s is not a duration from 10ms to 1h",
		"LENS_ENDPOINT_PROBE_TIMEOUT=soon": `LENS_ENDPOINT_PROBE_TIMEOUT="soon" is not a duration such as 2s`,
	} {
		k, v, _ := strings.Cut(env, "=")
		if _, err := inventoryapi.LoadConfig(fntest.Config(t, fntest.Env(t, map[string]string{k: v}))); err == nil || err.Error() != want {
			t.Errorf("%s: err = %v, want %q", env, err, want)
		}
	}
}
