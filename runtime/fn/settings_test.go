package fn_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/fn"
)

type testSettings struct {
	Workers  int           `env:"LENS_TEST_WORKERS" envDefault:"2"`
	Interval time.Duration `env:"LENS_TEST_INTERVAL" envDefault:"3s"`
	Secure   bool          `env:"LENS_TEST_SECURE" envDefault:"true"`
	Mirror   string        `env:"LENS_TEST_MIRROR"`
}

func (s *testSettings) Validate() error {
	s.Mirror = strings.TrimSpace(s.Mirror)
	if s.Workers < 1 {
		return fmt.Errorf("LENS_TEST_WORKERS=%d is not a positive integer", s.Workers)
	}
	return nil
}

func TestReadSettings(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		want    testSettings
		wantErr string
	}{
		{name: "defaults", env: map[string]string{}, want: testSettings{Workers: 2, Interval: 3 * time.Second, Secure: true}},
		{name: "set", env: map[string]string{"LENS_TEST_WORKERS": "5", "LENS_TEST_INTERVAL": "250ms", "LENS_TEST_SECURE": "false",
			"LENS_TEST_MIRROR": " http://m "}, want: testSettings{Workers: 5, Interval: 250 * time.Millisecond, Mirror: "http://m"}},
		{name: "bad integer", env: map[string]string{"LENS_TEST_WORKERS": "many"}, wantErr: `LENS_TEST_WORKERS="many" is not an integer`},
		{name: "bad duration", env: map[string]string{"LENS_TEST_INTERVAL": "soon"}, wantErr: `LENS_TEST_INTERVAL="soon" is not a duration such as 2s`},
		{name: "negative duration", env: map[string]string{"LENS_TEST_INTERVAL": "-1s"}, wantErr: `LENS_TEST_INTERVAL="-1s" is not a duration`},
		{name: "bad bool", env: map[string]string{"LENS_TEST_SECURE": "maybe"}, wantErr: `LENS_TEST_SECURE "maybe" is not true or false`},
		{name: "validate", env: map[string]string{"LENS_TEST_WORKERS": "0"}, wantErr: "LENS_TEST_WORKERS=0 is not a positive integer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := map[string]string{"HOME": t.TempDir()}
			for k, v := range tc.env {
				e[k] = v
			}
			cfg, err := fn.LoadConfig(e)
			if err != nil {
				t.Fatal(err)
			}
			var s testSettings
			err = cfg.ReadSettings(&s)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "field") {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || s != tc.want {
				t.Fatalf("settings %+v, %v; want %+v", s, err, tc.want)
			}
		})
	}
	// Several bad values are all reported.
	cfg, _ := fn.LoadConfig(map[string]string{"HOME": t.TempDir(), "LENS_TEST_WORKERS": "x", "LENS_TEST_INTERVAL": "y"})
	var s testSettings
	if err := cfg.ReadSettings(&s); err == nil || !strings.Contains(err.Error(), "LENS_TEST_WORKERS") || !strings.Contains(err.Error(), "LENS_TEST_INTERVAL") {
		t.Fatalf("err = %v", err)
	}
	if err := cfg.ReadSettings(s); err == nil {
		t.Fatalf("a non-pointer was read: %v", err)
	}
}
