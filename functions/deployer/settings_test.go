package deployer_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/deployer"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
)

func TestReadSettings(t *testing.T) {
	s, err := deployer.ReadSettings(fntest.Config(t, fntest.Env(t, nil)))
	if err != nil || s.LeaseTTL != 15*time.Second || s.SweepInterval != 2*time.Second || s.DeployTimeout != 2*time.Minute ||
		s.BinDir == "" || s.TargetsDir != "" {
		t.Fatalf("defaults %+v, %v", s, err)
	}
	for _, tc := range []struct{ key, value, wantErr string }{
		{"LENS_DEPLOY_TIMEOUT", "0s", "LENS_DEPLOY_TIMEOUT must be a positive duration"},
		{"LENS_DEPLOY_TIMEOUT", "later", `LENS_DEPLOY_TIMEOUT="later" is not a duration such as 2s`},
	} {
		if _, err := deployer.ReadSettings(fntest.Config(t, fntest.Env(t, map[string]string{tc.key: tc.value}))); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s=%s: err = %v, want %q", tc.key, tc.value, err, tc.wantErr)
		}
	}
}
