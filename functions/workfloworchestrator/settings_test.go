package workfloworchestrator_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/workfloworchestrator"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
)

func TestSettings(t *testing.T) {
	read := func(env map[string]string) (workfloworchestrator.Settings, error) {
		var s workfloworchestrator.Settings
		err := fntest.Config(t, fntest.Env(t, env)).ReadSettings(&s)
		return s, err
	}
	if s, err := read(nil); err != nil || s.SweepInterval != 2*time.Second || s.ResendAfter != 10*time.Second {
		t.Fatalf("defaults %+v, %v", s, err)
	}
	if s, err := read(map[string]string{"LENS_SWEEP_INTERVAL": "500ms"}); err != nil || s.SweepInterval != 500*time.Millisecond || s.ResendAfter != 2500*time.Millisecond {
		t.Fatalf("set %+v, %v", s, err)
	}
	if _, err := read(map[string]string{"LENS_SWEEP_INTERVAL": "0s"}); err == nil || !strings.Contains(err.Error(), "LENS_SWEEP_INTERVAL must be a positive duration") {
		t.Fatalf("zero sweep: %v", err)
	}
}
