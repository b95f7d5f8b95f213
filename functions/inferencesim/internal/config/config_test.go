package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseConfigFlags(t *testing.T) {
	cfg, err := Parse([]string{"--model", "m", "--served-model-name", "a", "b", "--port=9000",
		"--time-to-first-token", "1.5ms", "--inter-token-latency", "500us", "--failure-types", "rate_limit", "server_error",
		"--lora-modules", `{"name":"l1","path":"/p"}`, `{"name":"l2"}`, "--enable-kvcache", "--max-loras", "2", "-v", "4"}, Environment{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Port != 9000 || strings.Join(cfg.ServedModelNames, ",") != "a,b" || len(cfg.LoRAModules) != 2 ||
		cfg.Latency.TimeToFirstToken != 1500*time.Microsecond || cfg.Latency.InterTokenLatency != 500*time.Microsecond ||
		len(cfg.FailureTypes) != 2 || !cfg.EnableKVCache || cfg.MaxCPULoRAs != 2 {
		t.Fatalf("%+v", cfg)
	}
}

func TestParseConfigYAMLAndPrecedence(t *testing.T) {
	yaml := `
model: from-yaml
port: 8100
max-num-seqs: 7
served-model-name: [x, y]
global-cache-hit-threshold: 0.5
lora-modules:
  - {"name": "l1", "path": "/p1"}
  - '{"name":"l2"}'
fake-metrics:
  running-requests: 3
time-to-first-token: 20
`
	read := func(string) ([]byte, error) { return []byte(yaml), nil }
	cfg, err := Parse([]string{"--config", "sim.yaml", "--max-num-seqs", "9"}, Environment{Port: "8080"}, read)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Model != "from-yaml" || cfg.Port != 8100 || cfg.MaxNumSeqs != 9 || len(cfg.LoRAModules) != 2 ||
		cfg.GlobalCacheHitThreshold != 0.5 || cfg.FakeMetrics == nil || cfg.FakeMetrics.RunningRequests != 3 ||
		cfg.Latency.TimeToFirstToken != 20*time.Millisecond || strings.Join(cfg.ServedModelNames, ",") != "x,y" {
		t.Fatalf("%+v", cfg)
	}
	// PORT from the environment applies when neither file nor flag sets it.
	cfg, err = Parse([]string{"--model", "m"}, Environment{Port: "8080", PodName: "p"}, nil)
	if err != nil || cfg.Port != 8080 || cfg.PodName != "p" {
		t.Fatalf("%v %+v", err, cfg)
	}
	cfg, _ = Parse([]string{"--model", "m", "--port", "7000"}, Environment{Port: "8080"}, nil)
	if cfg.Port != 7000 {
		t.Fatal("--port must win over PORT")
	}
	if cfg, _ := Parse(nil, Environment{SimModel: "env-model"}, nil); cfg == nil || cfg.Model != "env-model" {
		t.Fatal("SIM_MODEL ignored")
	}
}

func TestParseConfigErrors(t *testing.T) {
	cases := map[string][]string{
		"missing model":        {},
		"unknown flag":         {"--model", "m", "--nope", "1"},
		"bad int":              {"--model", "m", "--max-num-seqs", "many"},
		"std-dev too big":      {"--model", "m", "--time-to-first-token", "10ms", "--time-to-first-token-std-dev", "5ms"},
		"bad mode":             {"--model", "m", "--mode", "loud"},
		"bad block size":       {"--model", "m", "--block-size", "10"},
		"bad failure type":     {"--model", "m", "--failure-types", "meteor"},
		"dp size":              {"--model", "m", "--data-parallel-size", "17"},
		"engine unknown model": {"--model", "m", "--latency-calculator", "engine"},
		"engine tp":            {"--model", "meta-llama/Llama-2-7b-hf", "--latency-calculator", "engine", "--tensor-parallel-size", "3"},
		"engine no fit":        {"--model", "meta-llama/Llama-2-70b-hf", "--latency-calculator", "engine", "--hardware", "L40S-48GB"},
		"engine bad gpu":       {"--model", "meta-llama/Llama-2-7b-hf", "--latency-calculator", "engine", "--hardware", "B999"},
		"engine warm-up":       {"--model", "meta-llama/Llama-2-7b-hf", "--latency-calculator", "engine", "--kernel-warmup-seconds", "-2"},
		"warm-up not a number": {"--model", "m", "--kernel-warmup-seconds", "soon"},
		"cpu loras":            {"--model", "m", "--max-loras", "3", "--max-cpu-loras", "2"},
		"lora base":            {"--model", "m", "--lora-modules", `{"name":"l","base_model_name":"other"}`},
		"bad fake metrics":     {"--model", "m", "--fake-metrics", `{"kv-cache-usage":2}`},
		"bad duration":         {"--model", "m", "--inter-token-latency", "fast"},
		"calculator":           {"--model", "m", "--latency-calculator", "quantum"},
		"dataset with echo":    {"--model", "m", "--mode", "echo", "--dataset-path", "/tmp/x.db"},
	}
	for name, args := range cases {
		if _, err := Parse(args, Environment{}, nil); err == nil {
			t.Errorf("%s: accepted %v", name, args)
		}
	}
	_, err := Parse([]string{"--config", "missing.yaml"}, Environment{}, func(string) ([]byte, error) { return nil, errors.New("no file") })
	if err == nil || !strings.Contains(err.Error(), "no file") {
		t.Fatalf("config file error: %v", err)
	}
}

func TestKernelWarmupFlag(t *testing.T) {
	cfg, err := Parse([]string{"--model", "mistralai/Mixtral-8x7B-v0.1", "--latency-calculator", "engine", "--tensor-parallel-size", "2",
		"--kernel-warmup-seconds", "0"}, Environment{}, nil)
	if err != nil || cfg.Engine.KernelWarmupSeconds == nil || *cfg.Engine.KernelWarmupSeconds != 0 {
		t.Fatalf("--kernel-warmup-seconds 0: %v %+v", err, cfg)
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"100ms": 100 * time.Millisecond, "0.5": 500 * time.Microsecond, "20": 20 * time.Millisecond, "750us": 750 * time.Microsecond} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("%s: %v %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "-5", "soon", "-1ms"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Under Knative the manifest sets no POD_NAME (fieldRef is refused by default): the hostname,
// which is the pod name, fills x-inference-pod. Outside Knative an unset POD_NAME stays unset,
// as in the reference simulator, so no header is sent.
func TestPodNameFromHostnameUnderKnative(t *testing.T) {
	cases := []struct {
		name string
		env  Environment
		want string
	}{
		{"knative without POD_NAME", Environment{KService: "inference-sim", Hostname: "inference-sim-00001-deployment-7d9f-x2k4q"}, "inference-sim-00001-deployment-7d9f-x2k4q"},
		{"POD_NAME wins", Environment{KService: "inference-sim", Hostname: "host", PodName: "pod-0"}, "pod-0"},
		{"outside knative", Environment{Hostname: "laptop"}, ""},
	}
	for _, tc := range cases {
		cfg, err := Parse([]string{"--model", "m"}, tc.env, nil)
		if err != nil || cfg.PodName != tc.want {
			t.Errorf("%s: PodName = %q (%v), want %q", tc.name, cfg.PodName, err, tc.want)
		}
	}
}
