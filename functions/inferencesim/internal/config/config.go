package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/limits"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/metrics"
	"github.com/lensfn/lensfn/runtime/enginemodel"
	"github.com/lensfn/lensfn/wasm-modules/latency"
	"github.com/lensfn/lensfn/wasm-modules/stepcost"
)

// Environment holds the process environment the simulator depends on. Only
// cmd/inference-sim reads it from the OS; everything else receives it here.
type Environment struct {
	Port           string // PORT (Knative): default port when --port is absent
	PodName        string // POD_NAME: x-inference-pod / x-inference-port headers
	KService       string // K_SERVICE: set under Knative, where Hostname is the pod name
	Hostname       string // the pod name under Knative, used when POD_NAME is unset there
	PodNamespace   string // POD_NAMESPACE: x-inference-namespace header
	PodIP          string // POD_IP: KV-event topic
	SimModel       string // SIM_MODEL: default for --model
	PythonHashSeed string // PYTHONHASHSEED: default for --hash-seed
	// Secrets come from the environment rather than the command line, where
	// every local user can read them (ps). The flags override them.
	ListenHost string // LENS_LISTEN_HOST: default for --host (the runtime's listen-host setting)
	APIKey     string // VLLM_API_KEY: default for --api-key
	AdminToken string // LENS_SIM_ADMIN_TOKEN: default for --admin-token
	// AllowedHosts is LENS_ALLOWED_HOSTS (comma-separated), the runtime's setting: the only
	// Host names /admin answers when set.
	AllowedHosts string
}

// LoRAModule is one entry of --lora-modules.
type LoRAModule struct {
	Name          string `json:"name"`
	Path          string `json:"path"`
	BaseModelName string `json:"base_model_name"`
}

// ToolCallConfig bounds the arguments synthesised for tool calls.
type ToolCallConfig struct {
	MaxIntegerParam                   int
	MinIntegerParam                   int
	MaxNumberParam                    float64
	MinNumberParam                    float64
	MaxArrayParamLength               int
	MinArrayParamLength               int
	NotRequiredParamProbability       int
	ObjectNotRequiredFieldProbability int
	ExtraCallProbability              int
	SkipValidation                    bool
}

// Config is the simulator's immutable configuration: every flag of the
// specification, filled from defaults, then the --config YAML file, then
// the command line.
type Config struct {
	Host                  string // listen address; empty: every interface
	Port                  int
	Model                 string
	ServedModelNames      []string
	LoRAModules           []LoRAModule
	MaxLoRAs              int
	MaxCPULoRAs           int
	MaxModelLen           int
	MaxNumSeqs            int
	MaxWaitingQueueLength int
	Mode                  string // "random" or "echo"

	LatencyCalculator string
	Latency           latency.Config

	// Engine is the engine model's settings (--latency-calculator engine): the model's
	// architecture, the GPU, vLLM's server settings; max-num-seqs, block-size and
	// max-model-len come from their own flags. StepCostModule names a WASM step-cost module
	// (empty: the native built-in).
	Engine         enginemodel.Spec
	StepCostModule string

	Seed int64

	Tools ToolCallConfig

	EnableKVCache           bool
	KVCacheSize             int
	BlockSize               int
	TokenizersCacheDir      string
	Tokenizer               string // a local tokenizer.json (or its directory); empty: the dummy tokenizer
	HashSeed                string
	ZMQEndpoint             string
	ZMQMaxConnectAttempts   int
	EventBatchSize          int
	UseVLLMMapEventFormat   bool
	GlobalCacheHitThreshold float64

	FailureInjectionRate int
	FailureTypes         []string

	FakeMetrics *metrics.FakeMetrics

	DataParallelSize int
	DataParallelRank int

	DatasetPath      string
	DatasetURL       string
	DatasetInMemory  bool
	DatasetTableName string

	SSLCertFile     string
	SSLKeyFile      string
	SelfSignedCerts bool

	MaxRequestBodySizeMB       int
	MaxInFlightRequestMB       int
	StartupDuration            time.Duration
	EnableRequestIDHeaders     bool
	DefaultEmbeddingDimensions int
	ShutdownTimeout            time.Duration

	// APIKey, when set, is the Bearer token every /v1/* request must carry
	// (vLLM's --api-key); AdminToken the one /admin/* requires. Neither is
	// ever logged or returned.
	APIKey     string
	AdminToken string
	// AllowedHosts, when set, are the only Host names /admin/* answers (LENS_ALLOWED_HOSTS;
	// DNS rebinding); unset, /admin answers addresses, localhost and cluster-internal names.
	AllowedHosts []string

	// Klog holds the klog flags in the order given (the command applies them to klog).
	Klog []KlogSetting

	// From the environment.
	PodName      string
	PodNamespace string
	PodIP        string
}

// Modes.
const (
	ModeRandom = "random"
	ModeEcho   = "echo"
)

// Failure types of --failure-types.
const (
	FailureRateLimit      = "rate_limit"
	FailureInvalidAPIKey  = "invalid_api_key"
	FailureContextLength  = "context_length"
	FailureServerError    = "server_error"
	FailureInvalidRequest = "invalid_request"
	FailureModelNotFound  = "model_not_found"
)

// AllFailureTypes is the default set, in a fixed order so that a seed gives
// the same failure pattern (the reference iterates a map here).
var AllFailureTypes = []string{FailureRateLimit, FailureInvalidAPIKey, FailureContextLength,
	FailureServerError, FailureInvalidRequest, FailureModelNotFound}

func defaultConfig() Config {
	return Config{
		Port:                  8000,
		MaxLoRAs:              1,
		MaxModelLen:           1024,
		MaxNumSeqs:            5,
		MaxWaitingQueueLength: 1000,
		Mode:                  ModeRandom,
		Latency:               latency.Config{TimeFactorUnderLoad: 1},
		Tools: ToolCallConfig{
			MaxIntegerParam: 100, MaxNumberParam: 100, MaxArrayParamLength: 5, MinArrayParamLength: 1,
			NotRequiredParamProbability: 50, ObjectNotRequiredFieldProbability: 50, ExtraCallProbability: 45,
		},
		KVCacheSize:                1024,
		BlockSize:                  16,
		ZMQEndpoint:                "tcp://127.0.0.1:5557",
		EventBatchSize:             16,
		DataParallelSize:           1,
		DataParallelRank:           -1,
		DatasetTableName:           "llmd",
		MaxRequestBodySizeMB:       4,
		MaxInFlightRequestMB:       1024,
		DefaultEmbeddingDimensions: 384,
		ShutdownTimeout:            30 * time.Second,
	}
}

// flagSpec describes one option: how many values it takes and how to apply
// them. The same table serves the command line and the YAML file.
type flagSpec struct {
	name  string
	multi bool // takes every following argument until the next --flag
	bool_ bool // a switch: "--x" means true
	help  string
	set   func(c *Config, vals []string) error
}

func intFlag(name, help string, p func(*Config) *int) flagSpec {
	return flagSpec{name: name, help: help, set: func(c *Config, v []string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v[0]))
		if err != nil {
			return fmt.Errorf("--%s: %q is not an integer", name, v[0])
		}
		*p(c) = n
		return nil
	}}
}

func floatFlag(name, help string, p func(*Config) *float64) flagSpec {
	return flagSpec{name: name, help: help, set: func(c *Config, v []string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v[0]), 64)
		if err != nil {
			return fmt.Errorf("--%s: %q is not a number", name, v[0])
		}
		*p(c) = f
		return nil
	}}
}

func strFlag(name, help string, p func(*Config) *string) flagSpec {
	return flagSpec{name: name, help: help, set: func(c *Config, v []string) error { *p(c) = v[0]; return nil }}
}

func boolFlag(name, help string, p func(*Config) *bool) flagSpec {
	return flagSpec{name: name, bool_: true, help: help, set: func(c *Config, v []string) error {
		b, err := strconv.ParseBool(strings.TrimSpace(v[0]))
		if err != nil {
			return fmt.Errorf("--%s: %q is not a boolean", name, v[0])
		}
		*p(c) = b
		return nil
	}}
}

func durFlag(name, help string, p func(*Config) *time.Duration) flagSpec {
	return flagSpec{name: name, help: help, set: func(c *Config, v []string) error {
		d, err := ParseDuration(v[0])
		if err != nil {
			return fmt.Errorf("--%s: %w", name, err)
		}
		*p(c) = d
		return nil
	}}
}

// ParseDuration accepts Go durations ("100ms", "1.5ms", "500us") and, as
// the specification allows, a bare number meaning milliseconds (which may
// be fractional: "0.5" is 500 us).
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty duration")
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 {
			return 0, fmt.Errorf("negative duration %q", s)
		}
		if math.IsNaN(f) || f*float64(time.Millisecond) >= math.MaxInt64 {
			return 0, fmt.Errorf("duration %q is out of range", s)
		}
		return time.Duration(f * float64(time.Millisecond)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q (use e.g. 100ms, 500us, or milliseconds)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration %q", s)
	}
	return d, nil
}

var flagTable = slices.Concat([]flagSpec{
	strFlag("host", "address to listen on (default: every interface, as vLLM)", func(c *Config) *string { return &c.Host }),
	intFlag("port", "port to listen on (default 8000, or $PORT)", func(c *Config) *int { return &c.Port }),
	strFlag("model", "model currently loaded (required, or $SIM_MODEL)", func(c *Config) *string { return &c.Model }),
	{name: "served-model-name", multi: true, help: "model names exposed by the API (space separated)", set: func(c *Config, v []string) error {
		c.ServedModelNames = splitFields(v)
		return nil
	}},
	{name: "lora-modules", multi: true, help: `LoRA adapters as JSON strings {"name","path","base_model_name"}`, set: func(c *Config, v []string) error {
		c.LoRAModules = c.LoRAModules[:0]
		for _, s := range v {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			var m LoRAModule
			if err := json.Unmarshal([]byte(s), &m); err != nil {
				return fmt.Errorf("--lora-modules: %q is not a JSON object: %v", s, err)
			}
			if m.Name == "" {
				return fmt.Errorf("--lora-modules: %q has no name", s)
			}
			c.LoRAModules = append(c.LoRAModules, m)
		}
		return nil
	}},
	intFlag("max-loras", "maximum LoRAs in a batch (default 1)", func(c *Config) *int { return &c.MaxLoRAs }),
	intFlag("max-cpu-loras", "maximum LoRAs kept in CPU memory (default max-loras)", func(c *Config) *int { return &c.MaxCPULoRAs }),
	intFlag("max-model-len", "context window in tokens (default 1024)", func(c *Config) *int { return &c.MaxModelLen }),
	intFlag("max-num-seqs", "maximum concurrently running requests (default 5)", func(c *Config) *int { return &c.MaxNumSeqs }),
	intFlag("max-waiting-queue-length", "maximum waiting requests (default 1000)", func(c *Config) *int { return &c.MaxWaitingQueueLength }),
	strFlag("mode", "random or echo (default random)", func(c *Config) *string { return &c.Mode }),
	strFlag("engine-model", "engine model: the model's architecture, a catalogue name or the path of a Hugging Face config.json (default: --model)", func(c *Config) *string { return &c.Engine.Model }),
	strFlag("hardware", "engine model: the GPU, a catalogue name (H100-SXM-80GB, H200-SXM-141GB, A100-SXM-80GB, L40S-48GB) or the path of a JSON file (default H100-SXM-80GB)", func(c *Config) *string { return &c.Engine.Hardware }),
	intFlag("tensor-parallel-size", "engine model: GPUs per replica (default 1)", func(c *Config) *int { return &c.Engine.TensorParallelSize }),
	intFlag("max-num-batched-tokens", "engine model: tokens per step (default 8192)", func(c *Config) *int { return &c.Engine.MaxNumBatchedTokens }),
	floatFlag("gpu-memory-utilization", "engine model: share of GPU memory for weights and KV cache (default 0.9)", func(c *Config) *float64 { return &c.Engine.GPUMemoryUtilization }),
	intFlag("kv-cache-blocks", "engine model: KV cache size in blocks (default: sized from the GPU's memory)", func(c *Config) *int { return &c.Engine.KVBlocks }),
	boolFlag("no-enable-prefix-caching", "engine model: turn the prefix cache off", func(c *Config) *bool { return &c.Engine.NoPrefixCaching }),
	boolFlag("no-async-scheduling", "engine model: turn async scheduling off", func(c *Config) *bool { return &c.Engine.NoAsyncScheduling }),
	{name: "kernel-warmup-seconds", help: "engine model: the stall per kernel configuration compiled on first use (a mixture of experts' fused-MoE kernels for step sizes its CUDA graphs did not capture; default 2 for a mixture-of-experts model, 0 for a dense one)", set: func(c *Config, v []string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v[0]), 64)
		if err != nil {
			return fmt.Errorf("--kernel-warmup-seconds: %q is not a number", v[0])
		}
		c.Engine.KernelWarmupSeconds = &f
		return nil
	}},
	{name: "step-cost-coefficients", help: "engine model: step-cost coefficients as JSON (default: the fitted ones)", set: func(c *Config, v []string) error {
		var coef stepcost.Coefficients
		dec := json.NewDecoder(strings.NewReader(v[0]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&coef); err != nil {
			return fmt.Errorf("--step-cost-coefficients: %v", err)
		}
		c.Engine.Coefficients = &coef
		return nil
	}},
	strFlag("step-cost-module", "engine model: a WASM step-cost module, wasm:<name> or a .wasm path (default: the native built-in)", func(c *Config) *string { return &c.StepCostModule }),
	strFlag("latency-calculator", "engine (the vLLM engine model), constant or per-token (default: constant when a TTFT is set), a WASM module by path (a .wasm whose directory holds its manifest), or wasm:<name> for a loaded module (the built-ins of $LENS_BUILTIN_MODULE_DIR, the user modules of $LENS_MODULE_DIR)", func(c *Config) *string { return &c.LatencyCalculator }),
}, latencyFlags(), []flagSpec{
	{name: "seed", help: "random seed (default: current Unix nanoseconds)", set: func(c *Config, v []string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v[0]), 10, 64)
		if err != nil {
			return fmt.Errorf("--seed: %q is not an integer", v[0])
		}
		c.Seed = n
		return nil
	}},
	intFlag("max-tool-call-integer-param", "maximum generated integer argument", func(c *Config) *int { return &c.Tools.MaxIntegerParam }),
	intFlag("min-tool-call-integer-param", "minimum generated integer argument", func(c *Config) *int { return &c.Tools.MinIntegerParam }),
	floatFlag("max-tool-call-number-param", "maximum generated number argument", func(c *Config) *float64 { return &c.Tools.MaxNumberParam }),
	floatFlag("min-tool-call-number-param", "minimum generated number argument", func(c *Config) *float64 { return &c.Tools.MinNumberParam }),
	intFlag("max-tool-call-array-param-length", "maximum generated array length", func(c *Config) *int { return &c.Tools.MaxArrayParamLength }),
	intFlag("min-tool-call-array-param-length", "minimum generated array length", func(c *Config) *int { return &c.Tools.MinArrayParamLength }),
	intFlag("tool-call-not-required-param-probability", "% chance to add an optional parameter", func(c *Config) *int { return &c.Tools.NotRequiredParamProbability }),
	intFlag("object-tool-call-not-required-field-probability", "% chance to add an optional object field", func(c *Config) *int { return &c.Tools.ObjectNotRequiredFieldProbability }),
	intFlag("tool-call-extra-call-probability", "% chance of one more tool call", func(c *Config) *int { return &c.Tools.ExtraCallProbability }),
	boolFlag("skip-tool-validation", "skip validation of tool JSON schemas", func(c *Config) *bool { return &c.Tools.SkipValidation }),
	boolFlag("enable-kvcache", "simulate the prefix KV cache and publish ZMQ events", func(c *Config) *bool { return &c.EnableKVCache }),
	intFlag("kv-cache-size", "maximum number of KV blocks (default 1024)", func(c *Config) *int { return &c.KVCacheSize }),
	intFlag("block-size", "tokens per KV block: 8, 16, 32, 64 or 128 (default 16)", func(c *Config) *int { return &c.BlockSize }),
	strFlag("tokenizer", "a local Hugging Face tokenizer.json (or its directory) prompts are tokenized with; nothing is downloaded (default: the dummy tokenizer)", func(c *Config) *string { return &c.Tokenizer }),
	strFlag("tokenizers-cache-dir", "directory searched for the model's tokenizer.json (<dir>/<model>/ or the hub's models--<org>--<name>/snapshots/*/) when --tokenizer is not given; nothing is downloaded", func(c *Config) *string { return &c.TokenizersCacheDir }),
	strFlag("hash-seed", "seed of block hashes (default $PYTHONHASHSEED)", func(c *Config) *string { return &c.HashSeed }),
	strFlag("zmq-endpoint", "ZMQ address KV events are published to", func(c *Config) *string { return &c.ZMQEndpoint }),
	intFlag("zmq-max-connect-attempts", "ZMQ connection attempts, 0 = retry forever (max 10)", func(c *Config) *int { return &c.ZMQMaxConnectAttempts }),
	intFlag("event-batch-size", "maximum KV events per ZMQ message (default 16)", func(c *Config) *int { return &c.EventBatchSize }),
	boolFlag("use-vllm-map-event-format", "encode KV events as msgpack maps", func(c *Config) *bool { return &c.UseVLLMMapEventFormat }),
	floatFlag("global-cache-hit-threshold", "server-wide cache hit threshold in [0,1]", func(c *Config) *float64 { return &c.GlobalCacheHitThreshold }),
	intFlag("failure-injection-rate", "% of requests failed on purpose (0-100)", func(c *Config) *int { return &c.FailureInjectionRate }),
	{name: "failure-types", multi: true, help: "failure types to inject (default all)", set: func(c *Config, v []string) error {
		c.FailureTypes = splitFields(v)
		return nil
	}},
	{name: "fake-metrics", multi: true, help: "JSON object of fixed metric values reported instead of real ones", set: func(c *Config, v []string) error {
		fm, err := metrics.ParseFakeMetrics([]byte(strings.Join(v, " ")))
		if err != nil {
			return fmt.Errorf("--fake-metrics: %w", err)
		}
		c.FakeMetrics = fm
		return nil
	}},
	intFlag("data-parallel-size", "ranks served on port..port+N-1 (1-16)", func(c *Config) *int { return &c.DataParallelSize }),
	intFlag("data-parallel-rank", "rank of this instance when ranks run as separate processes", func(c *Config) *int { return &c.DataParallelRank }),
	strFlag("dataset-path", "SQLite response dataset", func(c *Config) *string { return &c.DatasetPath }),
	strFlag("dataset-url", "download URL of the dataset when dataset-path is missing", func(c *Config) *string { return &c.DatasetURL }),
	boolFlag("dataset-in-memory", "load the whole dataset into memory", func(c *Config) *bool { return &c.DatasetInMemory }),
	strFlag("dataset-table-name", "dataset table name (default llmd)", func(c *Config) *string { return &c.DatasetTableName }),
	strFlag("ssl-certfile", "TLS certificate file", func(c *Config) *string { return &c.SSLCertFile }),
	strFlag("ssl-keyfile", "TLS key file", func(c *Config) *string { return &c.SSLKeyFile }),
	boolFlag("self-signed-certs", "serve HTTPS with a generated self-signed certificate", func(c *Config) *bool { return &c.SelfSignedCerts }),
	intFlag("max-request-body-size-mb", "maximum request body in MiB (1-512, default 4)", func(c *Config) *int { return &c.MaxRequestBodySizeMB }),
	intFlag("max-inflight-request-mb", "memory budget of the generation requests in flight in MiB, each counted as 6x its body; "+
		"a request that does not fit gets a 503 (from 6x --max-request-body-size-mb to 65536, default 1024)", func(c *Config) *int { return &c.MaxInFlightRequestMB }),
	durFlag("startup-duration", "/health/ready answers 503 for this long after start", func(c *Config) *time.Duration { return &c.StartupDuration }),
	boolFlag("enable-request-id-headers", "honour and echo X-Request-Id", func(c *Config) *bool { return &c.EnableRequestIDHeaders }),
	intFlag("default-embedding-dimensions", "default /v1/embeddings vector size (default 384)", func(c *Config) *int { return &c.DefaultEmbeddingDimensions }),
	durFlag("shutdown-timeout", "how long SIGTERM waits for in-flight requests (default 30s)", func(c *Config) *time.Duration { return &c.ShutdownTimeout }),
	strFlag("api-key", "Bearer key every /v1/* request must carry (default $VLLM_API_KEY; prefer the variable: flags are visible in ps)", func(c *Config) *string { return &c.APIKey }),
	strFlag("admin-token", "Bearer token /admin/* requires (default $LENS_SIM_ADMIN_TOKEN; prefer the variable)", func(c *Config) *string { return &c.AdminToken }),
}, klogFlags())

// latencyFlags are the latency core's flags (latency.DurationFlags, the one list of their
// names) as command-line flags setting Config.Latency.
func latencyFlags() []flagSpec {
	flags := make([]flagSpec, 0, len(latency.DurationFlags)+1)
	for _, f := range latency.DurationFlags {
		flags = append(flags, durFlag(f.Name, f.Help, func(c *Config) *time.Duration { return f.Field(&c.Latency) }))
	}
	return append(flags, floatFlag(latency.FactorFlag, latency.FactorHelp, func(c *Config) *float64 { return &c.Latency.TimeFactorUnderLoad }))
}

// ignoredFlags are vLLM options accepted so existing command lines keep working; they have
// no effect here.
var ignoredFlags = []string{"enforce-eager", "enable-prefix-caching"}

// KlogSetting is one klog flag as given (name without dashes, value as text), applied by
// the command to klog in order.
type KlogSetting struct{ Name, Value string }

// klogFlags are klog's flags, as the specification lists them (the reference logs through
// klog): checked for their type here, handed to klog by the command (klog checks the rest,
// e.g. --vmodule's patterns).
func klogFlags() []flagSpec {
	kinds := []struct{ name, kind, help string }{
		{"v", "int", "log verbosity: 1 warnings, 2 general messages (configuration, dataset), 4 debug (each completion request, LoRA loads), 5 trace (admission and queue)"},
		{"vmodule", "string", "comma-separated pattern=N settings for file-filtered verbosity"},
		{"logtostderr", "bool", "log to standard error instead of files (default true)"},
		{"alsologtostderr", "bool", "log to standard error as well as files (no effect with logtostderr)"},
		{"log_dir", "string", "write log files in this directory (no effect with logtostderr)"},
		{"log_file", "string", "write the log to this file (no effect with logtostderr)"},
		{"log_file_max_size", "uint", "maximum log file size in MB, 0 = unlimited (default 1800)"},
		{"log_backtrace_at", "string", "file:N: emit a stack trace when logging hits that line"},
		{"one_output", "bool", "write each message to its own severity's file only (no effect with logtostderr)"},
		{"skip_headers", "bool", "no header prefix on log messages"},
		{"skip_log_headers", "bool", "no headers when opening log files (no effect with logtostderr)"},
		{"stderrthreshold", "string", "messages at or above this severity also go to standard error when logging to files (default 2, ERROR)"},
		{"add_dir_header", "bool", "add the file's directory to the header"},
	}
	out := make([]flagSpec, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, flagSpec{name: k.name, bool_: k.kind == "bool", help: k.help, set: func(c *Config, v []string) error {
			val := strings.TrimSpace(v[0])
			var err error
			switch k.kind {
			case "bool":
				_, err = strconv.ParseBool(val)
			case "int":
				_, err = strconv.Atoi(val)
			case "uint":
				_, err = strconv.ParseUint(val, 10, 64)
			}
			if err != nil {
				return fmt.Errorf("--%s: %q is not a valid %s", k.name, v[0], k.kind)
			}
			c.Klog = append(c.Klog, KlogSetting{k.name, val})
			return nil
		}})
	}
	return out
}

func splitFields(v []string) []string {
	var out []string
	for _, s := range v {
		out = append(out, strings.Fields(s)...)
	}
	return out
}

func lookupFlag(name string) *flagSpec {
	for i := range flagTable {
		if flagTable[i].name == name {
			return &flagTable[i]
		}
	}
	return nil
}

type setting struct {
	name string
	vals []string
}

// scanArgs splits a command line into settings. Multi-value flags take every
// following argument up to the next one starting with "--".
func scanArgs(args []string) (configPath string, out []setting, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			return "", nil, fmt.Errorf("unexpected argument %q", a)
		}
		name := strings.TrimLeft(a, "-")
		var val string
		hasVal := false
		if k, v, ok := strings.Cut(name, "="); ok {
			name, val, hasVal = k, v, true
		}
		if name == "config" {
			if !hasVal {
				if i+1 >= len(args) {
					return "", nil, errors.New("--config needs a file path")
				}
				i++
				val = args[i]
			}
			configPath = val
			continue
		}
		if slices.Contains(ignoredFlags, name) {
			if !hasVal && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
			}
			continue
		}
		neg := false
		spec := lookupFlag(name)
		if spec == nil && strings.HasPrefix(name, "no-") {
			if s := lookupFlag(strings.TrimPrefix(name, "no-")); s != nil && s.bool_ {
				spec, neg = s, true
			}
		}
		if spec == nil {
			return "", nil, fmt.Errorf("unknown flag --%s", name)
		}
		switch {
		case neg:
			out = append(out, setting{spec.name, []string{"false"}})
		case hasVal:
			out = append(out, setting{spec.name, []string{val}})
		case spec.bool_:
			out = append(out, setting{spec.name, []string{"true"}})
		case spec.multi:
			var vals []string
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
				i++
				vals = append(vals, args[i])
			}
			out = append(out, setting{spec.name, vals})
		default:
			if i+1 >= len(args) {
				return "", nil, fmt.Errorf("--%s needs a value", name)
			}
			i++
			out = append(out, setting{spec.name, []string{args[i]}})
		}
	}
	return configPath, out, nil
}

// yamlSettings turns a YAML document with the flag names as keys into
// settings, so the file and the command line share one code path.
func yamlSettings(data []byte) ([]setting, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, errors.New("config file: top level must be a mapping of flag names to values")
	}
	var out []setting
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, node := root.Content[i].Value, root.Content[i+1]
		if slices.Contains(ignoredFlags, key) {
			continue
		}
		spec := lookupFlag(key)
		if spec == nil {
			return nil, fmt.Errorf("config file: unknown key %q", key)
		}
		vals, err := yamlValues(node)
		if err != nil {
			return nil, fmt.Errorf("config file: %s: %w", key, err)
		}
		if len(vals) == 0 && !spec.multi {
			continue
		}
		out = append(out, setting{spec.name, vals})
	}
	return out, nil
}

func yamlValues(n *yaml.Node) ([]string, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		return []string{n.Value}, nil
	case yaml.SequenceNode:
		var out []string
		for _, c := range n.Content {
			if c.Kind == yaml.ScalarNode {
				out = append(out, c.Value)
				continue
			}
			s, err := yamlToJSON(c)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	case yaml.MappingNode:
		s, err := yamlToJSON(n)
		if err != nil {
			return nil, err
		}
		return []string{s}, nil
	}
	return nil, fmt.Errorf("unsupported YAML value at line %d", n.Line)
}

func yamlToJSON(n *yaml.Node) (string, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return "", err
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// ParseConfig builds the configuration from a command line (without the
// program name) and the environment. The --config file is read with
// readFile (os.ReadFile when nil).
func Parse(args []string, env Environment, readFile func(string) ([]byte, error)) (*Config, error) {
	if readFile == nil {
		readFile = os.ReadFile
	}
	cfgPath, cli, err := scanArgs(args)
	if err != nil {
		return nil, err
	}
	c := defaultConfig()
	c.Seed = time.Now().UnixNano()
	if env.SimModel != "" {
		c.Model = env.SimModel
	}
	c.HashSeed = env.PythonHashSeed
	c.Host, c.APIKey, c.AdminToken = env.ListenHost, env.APIKey, env.AdminToken
	for _, h := range strings.Split(env.AllowedHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			c.AllowedHosts = append(c.AllowedHosts, h)
		}
	}
	if env.Port != "" {
		p, err := strconv.Atoi(env.Port)
		if err != nil {
			return nil, fmt.Errorf("PORT %q is not a port number", env.Port)
		}
		c.Port = p
	}
	var settings []setting
	if cfgPath != "" {
		data, err := readFile(cfgPath)
		if err != nil {
			return nil, fmt.Errorf("config file: %w", err)
		}
		if settings, err = yamlSettings(data); err != nil {
			return nil, err
		}
	}
	settings = append(settings, cli...) // command line wins: applied last
	maxCPUSet := false
	for _, s := range settings {
		spec := lookupFlag(s.name)
		if len(s.vals) == 0 && !spec.multi {
			return nil, fmt.Errorf("--%s needs a value", s.name)
		}
		if err := spec.set(&c, s.vals); err != nil {
			return nil, err
		}
		if s.name == "max-cpu-loras" {
			maxCPUSet = true
		}
	}
	if !maxCPUSet {
		c.MaxCPULoRAs = c.MaxLoRAs
	}
	c.PodName, c.PodNamespace, c.PodIP = env.PodName, env.PodNamespace, env.PodIP
	if c.PodName == "" && env.KService != "" {
		// Knative refuses the downward API (fieldRef) by default, but Kubernetes names a pod's
		// host after the pod, so the manifest needs no POD_NAME.
		c.PodName = env.Hostname
	}
	if len(c.ServedModelNames) == 0 && c.Model != "" {
		c.ServedModelNames = []string{c.Model}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Validate reports every invalid setting at once.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.Model == "" {
		bad("--model is required")
	}
	if c.Port < 0 || c.Port > 65535 {
		bad("--port %d out of range", c.Port)
	}
	if c.Host != "" && net.ParseIP(c.Host) == nil && !limits.ValidHostname(c.Host) {
		bad("--host %q is neither an IP address nor a host name", c.Host)
	}
	if len(c.LoRAModules) > limits.MaxLoRAAdapters {
		bad("--lora-modules: at most %d adapters", limits.MaxLoRAAdapters)
	}
	for _, l := range c.LoRAModules {
		if err := limits.CheckLoRA(l.Name, l.Path); err != nil {
			bad("--lora-modules: %v", err)
		}
		if l.BaseModelName != "" && l.BaseModelName != c.Model {
			bad("LoRA %q: base_model_name %q differs from --model %q", l.Name, l.BaseModelName, c.Model)
		}
	}
	if c.MaxLoRAs < 1 {
		bad("--max-loras must be >= 1")
	}
	if c.MaxCPULoRAs < c.MaxLoRAs {
		bad("--max-cpu-loras must be >= --max-loras")
	}
	if c.MaxModelLen < 1 {
		bad("--max-model-len must be >= 1")
	}
	if c.MaxNumSeqs < 1 {
		bad("--max-num-seqs must be >= 1")
	}
	if c.MaxWaitingQueueLength < 0 {
		bad("--max-waiting-queue-length must be >= 0")
	}
	if c.Mode != ModeRandom && c.Mode != ModeEcho {
		bad("--mode must be %q or %q", ModeRandom, ModeEcho)
	}
	if c.EngineModel() {
		if _, err := c.ResolveEngine(); err != nil {
			bad("engine model: %v", err)
		}
		if c.StepCostModule != "" && !IsModuleCalculator(c.StepCostModule) {
			bad("--step-cost-module %q must be wasm:<name> or the path of a .wasm module", c.StepCostModule)
		}
	} else if IsModuleCalculator(c.LatencyCalculator) {
		// A WASM module: loaded and configured (so checked) when the simulator starts; the
		// built-in checks still apply to the latency flags it receives.
		if _, err := latency.New(latency.NameAuto, c.Latency); err != nil {
			bad("latency: %v", err)
		}
	} else if _, err := latency.New(c.LatencyCalculator, c.Latency); err != nil {
		bad("latency: %v", err)
	}
	errs = append(errs, limits.CheckLatency(c.Latency)...)
	t := c.Tools
	if t.MinIntegerParam > t.MaxIntegerParam || t.MinNumberParam > t.MaxNumberParam {
		bad("tool-call parameter minimums must not exceed maximums")
	}
	if t.MinArrayParamLength < 0 || t.MinArrayParamLength > t.MaxArrayParamLength {
		bad("tool-call array lengths: need 0 <= min <= max")
	}
	if t.MaxArrayParamLength > limits.MaxToolArrayItems {
		bad("--max-tool-call-array-param-length must be <= %d", limits.MaxToolArrayItems)
	}
	if math.IsNaN(t.MinNumberParam) || math.IsNaN(t.MaxNumberParam) || math.IsInf(t.MinNumberParam, 0) || math.IsInf(t.MaxNumberParam, 0) {
		bad("tool-call number parameters must be finite")
	}
	for _, p := range []int{t.NotRequiredParamProbability, t.ObjectNotRequiredFieldProbability, t.ExtraCallProbability} {
		if p < 0 || p > 100 {
			bad("tool-call probabilities must be within 0-100")
			break
		}
	}
	if c.KVCacheSize < 1 {
		bad("--kv-cache-size must be >= 1")
	}
	if !slices.Contains([]int{8, 16, 32, 64, 128}, c.BlockSize) {
		bad("--block-size must be one of 8, 16, 32, 64, 128")
	}
	if c.ZMQMaxConnectAttempts < 0 || c.ZMQMaxConnectAttempts > 10 {
		bad("--zmq-max-connect-attempts must be within 0-10")
	}
	if c.EventBatchSize < 1 {
		bad("--event-batch-size must be >= 1")
	}
	if c.GlobalCacheHitThreshold < 0 || c.GlobalCacheHitThreshold > 1 {
		bad("--global-cache-hit-threshold must be within [0,1]")
	}
	if c.FailureInjectionRate < 0 || c.FailureInjectionRate > 100 {
		bad("--failure-injection-rate must be within 0-100")
	}
	for _, f := range c.FailureTypes {
		if !slices.Contains(AllFailureTypes, f) {
			bad("unknown failure type %q (want one of %s)", f, strings.Join(AllFailureTypes, ", "))
		}
	}
	if c.DataParallelSize < 1 || c.DataParallelSize > 16 {
		bad("--data-parallel-size must be within 1-16")
	}
	if c.DataParallelRank < -1 || c.DataParallelRank > 15 {
		bad("--data-parallel-rank must be within 0-15")
	}
	if c.DatasetPath != "" && c.Mode == ModeEcho {
		bad("a dataset cannot be used in echo mode")
	}
	if c.DatasetURL != "" && c.DatasetPath == "" {
		bad("--dataset-url needs --dataset-path")
	}
	if (c.SSLCertFile == "") != (c.SSLKeyFile == "") {
		bad("--ssl-certfile and --ssl-keyfile go together")
	}
	if c.MaxRequestBodySizeMB < 1 || c.MaxRequestBodySizeMB > 512 {
		bad("--max-request-body-size-mb must be within 1-512")
	} else if c.MaxInFlightRequestMB < limits.BytesPerBodyByte*c.MaxRequestBodySizeMB || c.MaxInFlightRequestMB > 65536 {
		bad("--max-inflight-request-mb must be within %d (%dx --max-request-body-size-mb, so the largest request fits) and 65536",
			limits.BytesPerBodyByte*c.MaxRequestBodySizeMB, limits.BytesPerBodyByte)
	}
	if c.DefaultEmbeddingDimensions < 1 || c.DefaultEmbeddingDimensions > limits.MaxEmbeddingDimensions {
		bad("--default-embedding-dimensions must be within 1-%d", limits.MaxEmbeddingDimensions)
	}
	if c.StartupDuration > time.Hour || c.ShutdownTimeout > time.Hour {
		bad("--startup-duration and --shutdown-timeout must not exceed 1h")
	}
	if err := limits.CheckToken(c.APIKey); err != nil {
		bad("--api-key %v", err)
	}
	if err := limits.CheckToken(c.AdminToken); err != nil {
		bad("--admin-token %v", err)
	}
	return errors.Join(errs...)
}

// Usage lists every flag, one per line.
func Usage() string {
	var b strings.Builder
	b.WriteString("usage: inference-sim --model NAME [flags]\n  --config FILE  YAML file with the flags below as keys (command line wins)\n")
	for _, f := range flagTable {
		fmt.Fprintf(&b, "  --%s  %s\n", f.name, f.help)
	}
	return b.String()
}

// EngineCalculator is the --latency-calculator that turns the engine model on.
const EngineCalculator = "engine"

// EngineModel reports whether the engine model times generation (--latency-calculator engine).
func (c *Config) EngineModel() bool { return c.LatencyCalculator == EngineCalculator }

// EngineSpec is the engine model's full specification: the engine flags, with the model's
// architecture defaulting to --model (when the catalogue has it) and max-num-seqs,
// block-size and max-model-len from their own flags.
func (c *Config) EngineSpec() enginemodel.Spec {
	sp := c.Engine
	if sp.Model == "" {
		sp.Model = c.Model
	}
	sp.MaxNumSeqs, sp.BlockSize, sp.MaxModelLen = c.MaxNumSeqs, c.BlockSize, c.MaxModelLen
	return sp.WithDefaults()
}

// ResolveEngine checks the engine model's inputs (the model, the GPU, TP, the memory) and
// sizes its KV cache.
func (c *Config) ResolveEngine() (*enginemodel.Resolved, error) {
	return c.EngineSpec().Resolve(true)
}

// IsModuleCalculator reports whether --latency-calculator names a WASM module: a path to a
// .wasm file, or wasm:<name> for a module loaded from the module directories.
func IsModuleCalculator(name string) bool {
	return strings.HasPrefix(name, "wasm:") || strings.HasSuffix(name, ".wasm") || strings.ContainsRune(name, filepath.Separator)
}

// ErrNeedsValue is SetFlag's answer to a flag given no value that needs one.
var ErrNeedsValue = errors.New("needs a value")

// SetFlag applies one flag's values to c exactly as the command line would (the one
// parser of each flag, shared with /admin/config). name must be a known flag.
func SetFlag(c *Config, name string, vals []string) error {
	spec := lookupFlag(name)
	if spec == nil {
		return fmt.Errorf("unknown flag --%s", name)
	}
	if len(vals) == 0 && !spec.multi {
		return ErrNeedsValue
	}
	return spec.set(c, vals)
}
