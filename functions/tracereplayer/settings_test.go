package tracereplayer

import (
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/fn/fntest"
)

func TestSettings(t *testing.T) {
	read := func(env map[string]string) (Settings, error) {
		var s Settings
		err := fntest.Config(t, fntest.Env(t, env)).ReadSettings(&s)
		return s, err
	}
	s, err := read(nil)
	if err != nil || s != (Settings{MaxConcurrent: 1, LeaseTTL: 15 * time.Second, SweepInterval: 2 * time.Second, PollInterval: 250 * time.Millisecond}) {
		t.Fatalf("defaults %+v, %v", s, err)
	}
	s, err = read(map[string]string{"LENS_MAX_CONCURRENT_TASKS": "3", "LENS_LEASE_TTL": "4s", "LENS_SWEEP_INTERVAL": "500ms"})
	if err != nil || s.MaxConcurrent != 3 || s.LeaseTTL != 4*time.Second || s.SweepInterval != 500*time.Millisecond {
		t.Fatalf("set %+v, %v", s, err)
	}
	for _, tc := range []struct{ key, value, wantErr string }{
		{"LENS_MAX_CONCURRENT_TASKS", "0", "LENS_MAX_CONCURRENT_TASKS=0 is not a positive integer"},
		{"LENS_MAX_CONCURRENT_TASKS", "two", `LENS_MAX_CONCURRENT_TASKS="two" is not an integer`},
		{"LENS_LEASE_TTL", "0s", "LENS_LEASE_TTL must be a positive duration"},
		{"LENS_SWEEP_INTERVAL", "often", `LENS_SWEEP_INTERVAL="often" is not a duration such as 2s`},
	} {
		if _, err := read(map[string]string{tc.key: tc.value}); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s=%s: err = %v, want %q", tc.key, tc.value, err, tc.wantErr)
		}
	}
}
