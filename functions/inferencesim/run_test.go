package inferencesim

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
)

func TestRunUsage(t *testing.T) {
	var out bytes.Buffer
	if err := Run(context.Background(), []string{"--help"}, config.Environment{}, &out); err != nil || !strings.Contains(out.String(), "--time-to-first-token") {
		t.Fatalf("help: %v %q", err, out.String())
	}
	out.Reset()
	err := Run(context.Background(), []string{"--max-num-seqs", "0"}, config.Environment{}, &out)
	if !errors.Is(err, ErrUsage) || !strings.Contains(out.String(), "--model is required") || !strings.Contains(out.String(), "--max-num-seqs must be >= 1") {
		t.Fatalf("bad command line: %v %q", err, out.String())
	}
}

// The command reads each setting from its variable, and the model from SIM_MODEL.
func TestLoadEnvironment(t *testing.T) {
	vars := map[string]string{"PORT": "9", "POD_NAME": "p", "K_SERVICE": "k", "POD_NAMESPACE": "ns", "POD_IP": "10.0.0.1",
		"SIM_MODEL": "m", "PYTHONHASHSEED": "3", "LENS_LISTEN_HOST": "127.0.0.1", "VLLM_API_KEY": "key",
		"LENS_SIM_ADMIN_TOKEN": "tok", "LENS_BUILTIN_MODULE_DIR": "/b", "LENS_MODULE_DIR": "/u", "LENS_CACHE_DIR": "/c"}
	env, dirs := LoadEnvironment(func(k string) string { return vars[k] }, "host-1")
	want := config.Environment{Port: "9", PodName: "p", KService: "k", Hostname: "host-1", PodNamespace: "ns", PodIP: "10.0.0.1",
		SimModel: "m", PythonHashSeed: "3", ListenHost: "127.0.0.1", APIKey: "key", AdminToken: "tok"}
	if env != want || dirs != (ModuleDirs{Builtin: "/b", User: "/u", Cache: "/c"}) {
		t.Fatalf("got %+v %+v", env, dirs)
	}
	var out bytes.Buffer
	err := runCommand(context.Background(), []string{"--max-num-seqs", "0"}, func(k string) string { return vars[k] }, "h", &out)
	if !errors.Is(err, ErrUsage) || strings.Contains(out.String(), "--model is required") {
		t.Fatalf("SIM_MODEL is not the default model: %v %q", err, out.String())
	}
}
