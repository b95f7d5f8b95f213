package deployconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/lensfn/lensfn/runtime/enginemodel"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/wasm-modules/stepcost"
)

// Provider refs: what a configuration deploys.
const (
	// ProviderBaselineVLLM is direct-vllm: replicas behind plain connection-level balancing, no
	// routing on the request's content.
	ProviderBaselineVLLM = "baseline-vllm"
	// ProviderOptimizedBaseline is replicas behind the inference router (profile optimized by
	// default; random, load and prefix-affinity for the router-profile baselines).
	ProviderOptimizedBaseline = "optimized-baseline"
	// ProviderPrecisePrefix is replicas publishing KV events over ZMQ to a precise-prefix router.
	ProviderPrecisePrefix = "precise-prefix-cache-routing"
	// ProviderPD is prefill and decode replicas behind a router running both P/D legs.
	ProviderPD = "pd-disaggregation"
)

// Router profiles (the inference router's --profile values).
const (
	ProfileRandom         = "random"
	ProfileLoad           = "load"
	ProfilePrefixAffinity = "prefix-affinity"
	ProfileOptimized      = "optimized"
	ProfilePrecisePrefix  = "precise-prefix"
	ProfilePD             = "pd"
)

// Bounds of the numbers a configuration holds (the baseline_parameters ranges of the spec).
const (
	MaxReplicas          = 32
	MaxTensorParallel    = 16
	MaxNumSeqs           = 100_000
	MaxModelLen          = 1_000_000
	MaxNameLength        = 200
	MaxImageLength       = 512
	MaxSimulatorFlags    = 64
	MaxSimulatorValueLen = 4096
	MaxListValues        = 64
)

// providerProfiles lists, per provider, the router profiles it accepts; the first is the default.
var providerProfiles = map[string][]string{
	ProviderBaselineVLLM:      nil,
	ProviderOptimizedBaseline: {ProfileOptimized, ProfilePrefixAffinity, ProfileLoad, ProfileRandom},
	ProviderPrecisePrefix:     {ProfilePrecisePrefix},
	ProviderPD:                {ProfilePD},
}

// Providers returns the provider refs this package understands, sorted.
func Providers() []string {
	out := make([]string, 0, len(providerProfiles))
	for p := range providerProfiles {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Known reports whether providerRef is one of Lensfn's own providers (other refs are stored
// as given, for deployers that are not ours).
func Known(providerRef string) bool { _, ok := providerProfiles[providerRef]; return ok }

// Model names what the replicas serve.
type Model struct {
	Name string `json:"name"`
}

// Decode is the decode (or only) pool.
type Decode struct {
	Replicas           int `json:"replicas"`
	TensorParallelSize int `json:"tensor_parallel_size"`
	MaxNumSeqs         int `json:"max_num_seqs,omitempty"`
	MaxModelLen        int `json:"max_model_len,omitempty"`
}

// Prefill is the prefill pool of a P/D deployment.
type Prefill struct {
	Replicas           int `json:"replicas"`
	TensorParallelSize int `json:"tensor_parallel_size"`
}

// Router is the router in front of the replicas.
type Router struct {
	Profile string `json:"profile"`
}

// Runtime says what the replicas run on the knative provider; no image means the simulator.
type Runtime struct {
	Image string `json:"image,omitempty"`
}

// Content is a parsed, validated configuration `content`, with defaults filled in.
type Content struct {
	Model   Model    `json:"model"`
	Decode  Decode   `json:"decode"`
	Prefill *Prefill `json:"prefill,omitempty"`
	Router  *Router  `json:"router,omitempty"`
	// Simulator holds inference-sim flags by name, each value checked against its kind.
	Simulator map[string]any `json:"simulator,omitempty"`
	Runtime   *Runtime       `json:"runtime,omitempty"`
}

// Deployment is a configuration ready to deploy: its provider and content.
type Deployment struct {
	ProviderRef string
	Content     Content
}

// Profile is the router profile, "" when the provider runs no content-aware router.
func (d Deployment) Profile() string {
	if d.Content.Router == nil {
		return ""
	}
	return d.Content.Router.Profile
}

// GPUs is the budget of the deployment: replicas times tensor parallelism over both pools (the
// P/D budget rule of the spec divides it by the baseline's tensor parallelism).
func (d Deployment) GPUs() int {
	n := d.Content.Decode.Replicas * d.Content.Decode.TensorParallelSize
	if p := d.Content.Prefill; p != nil {
		n += p.Replicas * p.TensorParallelSize
	}
	return n
}

type checker struct{ fields []problem.FieldError }

func (c *checker) fail(msg, kind string, loc ...string) {
	c.fields = append(c.fields, problem.Field(msg, kind, append([]string{"body", "content"}, loc...)...))
}

// object decodes raw as a JSON object and reports every key outside allowed.
func (c *checker) object(raw json.RawMessage, allowed []string, loc ...string) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		c.fail("must be a JSON object", "dict_type", loc...)
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(allowed, k) {
			c.fail(fmt.Sprintf("unknown key %q (allowed: %s)", k, strings.Join(allowed, ", ")), "extra_forbidden", append(loc, k)...)
		}
	}
	return m
}

// integer reads m[key] as an integer in [lo, hi]; absent gives def (0 with required set fails).
func (c *checker) integer(m map[string]json.RawMessage, key string, lo, hi, def int, required bool, loc ...string) int {
	raw, ok := m[key]
	if !ok || string(raw) == "null" {
		if required {
			c.fail("field required", "missing", append(loc, key)...)
		}
		return def
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		c.fail(fmt.Sprintf("must be an integer from %d to %d", lo, hi), "value_error", append(loc, key)...)
		return def
	}
	return int(f)
}

func (c *checker) text(m map[string]json.RawMessage, key string, maxLen int, required bool, loc ...string) string {
	raw, ok := m[key]
	if !ok || string(raw) == "null" {
		if required {
			c.fail("field required", "missing", append(loc, key)...)
		}
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || (required && s == "") || len(s) > maxLen ||
		strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		c.fail(fmt.Sprintf("must be a string of 1-%d printable characters", maxLen), "string_type", append(loc, key)...)
		return ""
	}
	return s
}

// Parse validates a configuration's content for providerRef. Every problem is reported at once
// as a 422 with one field error per key (an unknown key names itself).
func Parse(providerRef string, content json.RawMessage) (Deployment, error) {
	profiles, known := providerProfiles[providerRef]
	if !known {
		return Deployment{}, problem.Validation(problem.Field(fmt.Sprintf("provider %q is not one of %s", providerRef,
			strings.Join(Providers(), ", ")), "value_error", "body", "provider_ref"))
	}
	c := &checker{}
	top := c.object(content, []string{"model", "decode", "prefill", "router", "simulator", "runtime"})
	if top == nil {
		return Deployment{}, problem.Validation(c.fields...)
	}
	var out Content
	if raw, ok := top["model"]; !ok {
		c.fail("field required", "missing", "model")
	} else if m := c.object(raw, []string{"name"}, "model"); m != nil {
		out.Model.Name = c.text(m, "name", MaxNameLength, true, "model")
	}
	out.Decode = Decode{Replicas: 1, TensorParallelSize: 1}
	if raw, ok := top["decode"]; ok {
		if m := c.object(raw, []string{"replicas", "tensor_parallel_size", "max_num_seqs", "max_model_len"}, "decode"); m != nil {
			out.Decode = Decode{
				Replicas:           c.integer(m, "replicas", 1, MaxReplicas, 1, false, "decode"),
				TensorParallelSize: c.integer(m, "tensor_parallel_size", 1, MaxTensorParallel, 1, false, "decode"),
				MaxNumSeqs:         c.integer(m, "max_num_seqs", 1, MaxNumSeqs, 0, false, "decode"),
				MaxModelLen:        c.integer(m, "max_model_len", 1, MaxModelLen, 0, false, "decode"),
			}
		}
	}
	if raw, ok := top["prefill"]; ok {
		if providerRef != ProviderPD {
			c.fail("only "+ProviderPD+" has a prefill pool", "value_error", "prefill")
		} else if m := c.object(raw, []string{"replicas", "tensor_parallel_size"}, "prefill"); m != nil {
			out.Prefill = &Prefill{Replicas: c.integer(m, "replicas", 1, MaxReplicas, 1, false, "prefill"),
				TensorParallelSize: c.integer(m, "tensor_parallel_size", 1, MaxTensorParallel, 1, false, "prefill")}
		}
	} else if providerRef == ProviderPD {
		c.fail("field required: "+ProviderPD+" needs a prefill pool", "missing", "prefill")
	}
	profile := ""
	if raw, ok := top["router"]; ok {
		if m := c.object(raw, []string{"profile"}, "router"); m != nil {
			profile = c.text(m, "profile", MaxNameLength, false, "router")
		}
	}
	switch {
	case len(profiles) == 0 && profile != "":
		c.fail(providerRef+" runs no router (plain connection-level balancing); remove router.profile", "value_error", "router", "profile")
	case len(profiles) > 0 && profile == "":
		out.Router = &Router{Profile: profiles[0]}
	case len(profiles) > 0 && !slices.Contains(profiles, profile):
		c.fail(fmt.Sprintf("%s routes with %s, not %q", providerRef, strings.Join(profiles, " or "), profile), "value_error", "router", "profile")
	case len(profiles) > 0:
		out.Router = &Router{Profile: profile}
	}
	if raw, ok := top["simulator"]; ok {
		out.Simulator = c.simulator(raw)
	}
	if providerRef == ProviderPrecisePrefix {
		if v, set := out.Simulator["enable-kvcache"]; set && v == false {
			c.fail(ProviderPrecisePrefix+" needs the replicas' KV cache (its events feed the router)", "value_error", "simulator", "enable-kvcache")
		}
	}
	if raw, ok := top["runtime"]; ok {
		if m := c.object(raw, []string{"image"}, "runtime"); m != nil {
			out.Runtime = &Runtime{Image: c.text(m, "image", MaxImageLength, false, "runtime")}
		}
	}
	if len(c.fields) > 0 {
		return Deployment{}, problem.Validation(c.fields...)
	}
	return Deployment{ProviderRef: providerRef, Content: out}, nil
}

func (c *checker) simulator(raw json.RawMessage) map[string]any {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		c.fail("must be a JSON object of inference-sim flags", "dict_type", "simulator")
		return nil
	}
	if len(m) > MaxSimulatorFlags {
		c.fail(fmt.Sprintf("at most %d flags", MaxSimulatorFlags), "value_error", "simulator")
		return nil
	}
	out := map[string]any{}
	for name, v := range m {
		kind, ok := SimulatorFlags[name]
		switch {
		case !ok:
			c.fail(fmt.Sprintf("unknown key %q: not an inference-sim flag", name), "extra_forbidden", "simulator", name)
			continue
		case ReservedSimulatorFlags[name] != "":
			c.fail(fmt.Sprintf("%q is not settable: %s", name, ReservedSimulatorFlags[name]), "value_error", "simulator", name)
			continue
		case len(v) > MaxSimulatorValueLen:
			c.fail(fmt.Sprintf("value is longer than %d bytes", MaxSimulatorValueLen), "value_error", "simulator", name)
			continue
		}
		val, err := flagValue(kind, v)
		if err == nil {
			err = checkEngineFlag(name, val)
		}
		if err != nil {
			c.fail(err.Error(), "value_error", "simulator", name)
			continue
		}
		out[name] = val
	}
	return out
}

// checkEngineFlag refuses engine-model settings a replica could not start with, and any that
// would name a file on the deployer's host: a configuration names catalogue models and GPUs
// and built-in step-cost modules only.
func checkEngineFlag(name string, val any) error {
	switch name {
	case "engine-model":
		_, err := enginemodel.ResolveArch(val.(string), false)
		return err
	case "hardware":
		_, err := enginemodel.ResolveHardware(val.(string), false)
		return err
	case "step-cost-module":
		if s := val.(string); !strings.HasPrefix(s, "wasm:") || strings.ContainsAny(s, "/\\") {
			return fmt.Errorf("must name a loaded module as wasm:<name>; paths on the deployer's host are not accepted")
		}
	case "step-cost-coefficients":
		var coef stepcost.Coefficients
		dec := json.NewDecoder(strings.NewReader(val.(string)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&coef); err != nil {
			return fmt.Errorf("not step-cost coefficients: %v", err)
		}
		return coef.Validate()
	}
	return nil
}

// flagValue decodes v as a value of kind: int64, float64, string, bool, []string or a compact
// JSON object string.
func flagValue(kind FlagKind, v json.RawMessage) (any, error) {
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	var x any
	if err := d.Decode(&x); err != nil {
		return nil, err
	}
	switch kind {
	case FlagInt:
		if n, ok := x.(json.Number); ok {
			if i, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
				return i, nil
			}
		}
		return nil, fmt.Errorf("must be an integer")
	case FlagFloat:
		if n, ok := x.(json.Number); ok {
			if f, err := n.Float64(); err == nil {
				return f, nil
			}
		}
		return nil, fmt.Errorf("must be a number")
	case FlagBool:
		if b, ok := x.(bool); ok {
			return b, nil
		}
		return nil, fmt.Errorf("must be true or false")
	case FlagString, FlagDuration:
		if s, ok := x.(string); ok && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 }) {
			return s, nil
		}
		if n, ok := x.(json.Number); ok && kind == FlagDuration {
			return n.String(), nil
		}
		return nil, fmt.Errorf("must be a string")
	case FlagList:
		list, ok := x.([]any)
		if !ok || len(list) == 0 || len(list) > MaxListValues {
			return nil, fmt.Errorf("must be an array of 1-%d strings", MaxListValues)
		}
		out := make([]string, len(list))
		for i, e := range list {
			s, ok := e.(string)
			if !ok || s == "" || strings.HasPrefix(s, "--") {
				return nil, fmt.Errorf("item %d must be a non-empty string not starting with --", i)
			}
			out[i] = s
		}
		return out, nil
	case FlagJSON:
		if _, ok := x.(map[string]any); !ok {
			return nil, fmt.Errorf("must be a JSON object")
		}
		var buf bytes.Buffer
		_ = json.Compact(&buf, v)
		return buf.String(), nil
	}
	return nil, fmt.Errorf("unsupported flag kind %s", kind)
}

// SimulatorArgs renders the configuration's simulator flags as inference-sim arguments, sorted
// by name so the same configuration always gives the same command line.
func (c Content) SimulatorArgs() []string {
	names := make([]string, 0, len(c.Simulator))
	for n := range c.Simulator {
		names = append(names, n)
	}
	slices.Sort(names)
	var args []string
	for _, n := range names {
		switch v := c.Simulator[n].(type) {
		case []string:
			args = append(args, "--"+n)
			args = append(args, v...)
		case bool:
			args = append(args, "--"+n+"="+strconv.FormatBool(v))
		case int64:
			args = append(args, "--"+n+"="+strconv.FormatInt(v, 10))
		case float64:
			args = append(args, "--"+n+"="+strconv.FormatFloat(v, 'g', -1, 64))
		case string:
			args = append(args, "--"+n+"="+v)
		}
	}
	return args
}

// ReplicaArgs is the command line of one replica: the model, the decode limits and the
// configuration's simulator flags (the caller adds --port and KV-event wiring).
func (c Content) ReplicaArgs() []string {
	args := []string{"--model", c.Model.Name}
	if c.Decode.MaxNumSeqs > 0 {
		args = append(args, "--max-num-seqs="+strconv.Itoa(c.Decode.MaxNumSeqs))
	}
	if c.Decode.MaxModelLen > 0 {
		args = append(args, "--max-model-len="+strconv.Itoa(c.Decode.MaxModelLen))
	}
	return append(args, c.SimulatorArgs()...)
}

// BlockSize is the replicas' KV block size (the simulator's default 16 unless set), which the
// router's prefix index must use too.
func (c Content) BlockSize() int {
	if v, ok := c.Simulator["block-size"].(int64); ok && v > 0 {
		return int(v)
	}
	return 16
}

// HashSeed is the replicas' --hash-seed ("" unless set), which a precise-prefix router needs.
func (c Content) HashSeed() string {
	s, _ := c.Simulator["hash-seed"].(string)
	return s
}
