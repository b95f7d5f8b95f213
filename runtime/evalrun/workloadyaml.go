package evalrun

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/problem"
)

// InferencePerfConfig is the part of inference-perf's config schema an inline workload_yaml may
// use (reference/loadgen-eval-anchors.md §1.1). Like inference-perf's models it is strict: a key
// it does not know is an error naming the key. Sections Lensfn does not model (metrics, report,
// storage, tokenizer, circuit_breakers) are accepted and ignored.
type InferencePerfConfig struct {
	API             *IPAPI    `yaml:"api"`
	Data            *IPData   `yaml:"data"`
	Load            *IPLoad   `yaml:"load"`
	Server          *IPServer `yaml:"server"`
	Tokenizer       yaml.Node `yaml:"tokenizer"`
	Metrics         yaml.Node `yaml:"metrics"`
	Report          yaml.Node `yaml:"report"`
	Storage         yaml.Node `yaml:"storage"`
	CircuitBreakers yaml.Node `yaml:"circuit_breakers"`
}

// IPAPI is the api section: completion or chat, streamed or not (inference-perf's default is not).
type IPAPI struct {
	Type      string            `yaml:"type"`
	Streaming bool              `yaml:"streaming"`
	Headers   map[string]string `yaml:"headers"`
}

// IPLoad is the load section: constant, poisson or concurrent stages.
type IPLoad struct {
	Type                    string    `yaml:"type"`
	Stages                  []IPStage `yaml:"stages"`
	Interval                *float64  `yaml:"interval"`
	NumWorkers              *int      `yaml:"num_workers"`
	WorkerMaxConcurrency    *int      `yaml:"worker_max_concurrency"`
	WorkerMaxTCPConnections *int      `yaml:"worker_max_tcp_connections"`
	RequestTimeout          *float64  `yaml:"request_timeout"`
	BaseSeed                *int64    `yaml:"base_seed"`
}

// IPStage is one load stage: rate and duration, or num_requests and concurrency_level.
type IPStage struct {
	Rate             *float64 `yaml:"rate"`
	Duration         *float64 `yaml:"duration"`
	NumRequests      *int     `yaml:"num_requests"`
	ConcurrencyLevel *int     `yaml:"concurrency_level"`
}

// IPData is the data section: random or synthetic lengths, or shared prefix groups.
type IPData struct {
	Type               string          `yaml:"type"`
	InputDistribution  *IPDistribution `yaml:"input_distribution"`
	OutputDistribution *IPDistribution `yaml:"output_distribution"`
	SharedPrefix       *IPSharedPrefix `yaml:"shared_prefix"`
}

// IPDistribution is a token-length distribution.
type IPDistribution struct {
	Min        *int     `yaml:"min"`
	Max        *int     `yaml:"max"`
	Mean       *float64 `yaml:"mean"`
	StdDev     *float64 `yaml:"std_dev"`
	TotalCount *int     `yaml:"total_count"`
	Type       string   `yaml:"type"`
}

// IPSharedPrefix is the shared_prefix data generator. EnableMultiTurnChat makes its requests
// the turns of one conversation per (group, prompt) user, as inference-perf does (PlanMultiTurn).
type IPSharedPrefix struct {
	NumGroups           int    `yaml:"num_groups"`
	NumPromptsPerGroup  int    `yaml:"num_prompts_per_group"`
	SystemPromptLen     int    `yaml:"system_prompt_len"`
	QuestionLen         int    `yaml:"question_len"`
	OutputLen           int    `yaml:"output_len"`
	Seed                *int64 `yaml:"seed"`
	EnableMultiTurnChat bool   `yaml:"enable_multi_turn_chat"`
}

// IPServer is the server section; the run's target replaces base_url and model_name.
type IPServer struct {
	Type      string `yaml:"type"`
	ModelName string `yaml:"model_name"`
	BaseURL   string `yaml:"base_url"`
	IgnoreEOS *bool  `yaml:"ignore_eos"`
	APIKey    string `yaml:"api_key"`
}

// ParseWorkloadYAML reads an inline workload_yaml strictly and checks it describes a workload
// Lensfn runs; every problem is a 422 field error under body.workload_yaml.
func ParseWorkloadYAML(text string) (*InferencePerfConfig, error) {
	if len(text) > MaxWorkloadYAMLBytes {
		return nil, yamlError(fmt.Sprintf("must be at most %d bytes", MaxWorkloadYAMLBytes))
	}
	dec := yaml.NewDecoder(bytes.NewReader([]byte(text)))
	dec.KnownFields(true)
	var cfg InferencePerfConfig
	if err := dec.Decode(&cfg); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, yamlError("is empty")
		}
		return nil, yamlError(cleanYAMLError(err))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, yamlError("must hold one YAML document")
	}
	var fe fieldErrors
	cfg.validate(&fe)
	if err := fe.err(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

func yamlError(msg string, loc ...string) error {
	return problem.Validation(problem.Field(msg, "value_error", append([]string{"body", "workload_yaml"}, loc...)...))
}

// cleanYAMLError keeps yaml.v3's message (which names an unknown key: "field nope not found in
// type ...") without Go type names.
func cleanYAMLError(err error) string {
	msg := err.Error()
	var out []string
	for _, line := range strings.Split(msg, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line == "yaml: unmarshal errors:" {
			continue
		}
		if i := strings.Index(line, " not found in type "); i >= 0 {
			line = strings.Replace(line[:i], "field ", "unknown key ", 1)
		}
		if i := strings.Index(line, " into "); i >= 0 && strings.Contains(line, "cannot unmarshal") {
			line = line[:i] + " here"
		}
		out = append(out, strings.TrimPrefix(line, "yaml: "))
	}
	if len(out) > 5 {
		out = append(out[:5], fmt.Sprintf("and %d more", len(out)-5))
	}
	return strings.Join(out, "; ")
}

func (c *InferencePerfConfig) validate(fe *fieldErrors) {
	add := func(msg string, loc ...string) {
		fe.add(msg, "value_error", append([]string{"workload_yaml"}, loc...)...)
	}
	if c.Load == nil || c.API == nil || c.Data == nil {
		add("must contain the sections load, api and data")
		return
	}
	switch c.API.Type {
	case "", "completion", "chat":
	default:
		add(fmt.Sprintf("%q is not supported; use completion or chat", c.API.Type), "api", "type")
	}
	switch c.Data.Type {
	case "random", "synthetic":
		for name, d := range map[string]*IPDistribution{"input_distribution": c.Data.InputDistribution, "output_distribution": c.Data.OutputDistribution} {
			if d == nil {
				continue
			}
			limit := MaxInputTokens
			if name == "output_distribution" {
				limit = MaxOutputTokens
			}
			dist := d.resolve()
			if dist.Min < 1 || dist.Max > limit || dist.Min > dist.Max || dist.Mean < dist.Min || dist.Mean > dist.Max || dist.StdDev < 0 {
				add(fmt.Sprintf("needs 1 <= min <= mean <= max <= %d and std_dev >= 0", limit), "data", name)
			}
		}
	case "shared_prefix":
		sp := c.Data.SharedPrefix
		if sp == nil {
			add("is required with type shared_prefix", "data", "shared_prefix")
			break
		}
		if sp.EnableMultiTurnChat {
			defer func() {
				if len(*fe) == 0 { // the bounds need lengths and stages in range
					_, generated := c.Workload()
					checkMultiTurn(generated, func(msg string, loc []string) { add(msg, loc...) },
						[]string{"load", "stages"}, []string{"data", "shared_prefix", "enable_multi_turn_chat"})
				}
			}()
		}
		if sp.NumGroups < 1 || sp.NumGroups > MaxSharedPrefixGroups || sp.NumPromptsPerGroup < 1 || sp.NumPromptsPerGroup > MaxSharedPrefixGroups ||
			sp.SystemPromptLen < 0 || sp.QuestionLen < 1 || sp.SystemPromptLen+sp.QuestionLen > MaxInputTokens || sp.OutputLen < 1 || sp.OutputLen > MaxOutputTokens {
			add("needs num_groups and num_prompts_per_group in 1-10000, question_len and output_len >= 1, and lengths within the limits", "data", "shared_prefix")
		}
	default:
		add(fmt.Sprintf("%q is not supported; use random, synthetic or shared_prefix", c.Data.Type), "data", "type")
	}
	if c.Load.RequestTimeout != nil && (*c.Load.RequestTimeout <= 0 || *c.Load.RequestTimeout > MaxStageDuration) {
		add("must be > 0 and <= 14400 seconds", "load", "request_timeout")
	}
	switch {
	case len(c.Load.Stages) == 0:
		add("at least one stage is required", "load", "stages")
		return
	case len(c.Load.Stages) > MaxRateStages:
		add(fmt.Sprintf("at most %d stages", MaxRateStages), "load", "stages")
		return
	}
	for i, st := range c.Load.Stages {
		idx := fmt.Sprint(i)
		switch c.Load.Type {
		case "", "constant", "poisson":
			if st.NumRequests != nil || st.ConcurrencyLevel != nil {
				add("a rate stage takes rate and duration, not num_requests or concurrency_level", "load", "stages", idx)
			}
			if st.Rate == nil || *st.Rate <= 0 || *st.Rate > MaxRate || st.Duration == nil || *st.Duration <= 0 || *st.Duration > MaxStageDuration {
				add(fmt.Sprintf("needs 0 < rate <= %d and 0 < duration <= %d", MaxRate, MaxStageDuration), "load", "stages", idx)
			}
		case "concurrent":
			if st.Rate != nil || st.Duration != nil {
				add("a concurrent stage takes num_requests and concurrency_level, not rate or duration", "load", "stages", idx)
			}
			if st.NumRequests == nil || *st.NumRequests < 1 || *st.NumRequests > MaxStageRequests ||
				st.ConcurrencyLevel == nil || *st.ConcurrencyLevel < 1 || *st.ConcurrencyLevel > MaxConcurrency {
				add(fmt.Sprintf("needs 1 <= num_requests <= %d and 1 <= concurrency_level <= %d", MaxStageRequests, MaxConcurrency), "load", "stages", idx)
			}
		default:
			add(fmt.Sprintf("%q is not supported; use constant, poisson or concurrent", c.Load.Type), "load", "type")
			return
		}
	}
	if c.Load.Type == "concurrent" && c.Data.Type == "shared_prefix" {
		add("shared_prefix data runs on rate stages (constant or poisson)", "load", "type")
	}
}

// resolve fills a distribution's defaults (inference-perf's: min 10, max 1024, mean 512,
// std_dev 200).
func (d *IPDistribution) resolve() Distribution {
	out := Distribution{Min: 10, Max: 1024, Mean: 512, StdDev: 200}
	if d == nil {
		return out
	}
	if d.Min != nil {
		out.Min = *d.Min
	}
	if d.Max != nil {
		out.Max = *d.Max
	}
	if d.Mean != nil {
		out.Mean = int(*d.Mean)
	}
	if d.StdDev != nil {
		out.StdDev = int(*d.StdDev)
	}
	return out
}

// Workload is the config as a runnable workload: rate stages or concurrency stages of random
// lengths, or (SharedPrefix set) shared-prefix rate stages.
func (c *InferencePerfConfig) Workload() (Workload, *events.SharedPrefix) {
	w := Workload{Name: "workload_yaml", API: c.API.Type, Stream: c.API.Streaming, IgnoreEOS: true,
		Input: c.Data.InputDistribution.resolve(), Output: c.Data.OutputDistribution.resolve()}
	if w.API == "" {
		w.API = "completion"
	}
	if c.Server != nil && c.Server.IgnoreEOS != nil {
		w.IgnoreEOS = *c.Server.IgnoreEOS
	}
	if c.Load.RequestTimeout != nil {
		w.RequestTimeout = *c.Load.RequestTimeout
	}
	for _, st := range c.Load.Stages {
		if c.Load.Type == "concurrent" {
			w.ConcurrencyStages = append(w.ConcurrencyStages, events.ConcurrencyStage{Concurrency: *st.ConcurrencyLevel, NumRequests: *st.NumRequests})
		} else {
			w.Stages = append(w.Stages, events.RateStage{Rate: *st.Rate, Duration: *st.Duration})
		}
	}
	if c.Data.Type != "shared_prefix" {
		return w, nil
	}
	sp := c.Data.SharedPrefix
	generated := &events.SharedPrefix{NumGroups: sp.NumGroups, NumPromptsPerGroup: sp.NumPromptsPerGroup, SystemPromptLen: sp.SystemPromptLen,
		QuestionLen: sp.QuestionLen, OutputLen: sp.OutputLen, Stages: w.Stages, Seed: sp.Seed}
	if sp.EnableMultiTurnChat {
		on := true
		generated.EnableMultiTurnChat = &on
	}
	return w, generated
}
