package latency

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Config holds the simulator's latency flags (the specification's time-to-first-token and
// friends). The simulator's command line, its /admin/config and a WASM calculator's
// configuration JSON all fill this one type.
type Config struct {
	TimeToFirstToken             time.Duration
	TimeToFirstTokenStdDev       time.Duration
	InterTokenLatency            time.Duration
	InterTokenLatencyStdDev      time.Duration
	KVCacheTransferLatency       time.Duration
	KVCacheTransferLatencyStdDev time.Duration
	PrefillOverhead              time.Duration
	PrefillTimePerToken          time.Duration
	PrefillTimeStdDev            time.Duration
	KVCacheTransferTimePerToken  time.Duration
	KVCacheTransferTimeStdDev    time.Duration
	// TimeFactorUnderLoad (>= 1; 0 means 1) multiplies TTFT, prefill and inter-token
	// times linearly from 1 (one running request) to the factor (max-num-seqs running).
	TimeFactorUnderLoad float64
}

// DurationFlag is one duration-valued latency flag: its name on the command line and in
// configuration JSON, its help text, the Config field it sets, and whether it is a time per
// token (the simulator bounds those more tightly than fixed delays).
type DurationFlag struct {
	Name     string
	Help     string
	Field    func(*Config) *time.Duration
	PerToken bool
}

// FactorFlag is the name of the one non-duration latency flag, time-factor-under-load.
const FactorFlag = "time-factor-under-load"

// FactorHelp is its help text.
const FactorHelp = "latency multiplier at max-num-seqs running (>= 1)"

// DurationFlags lists every duration-valued latency flag, in the order the help shows them.
// It is the one list of latency flag names: the simulator's flag table, its /admin/config
// view and the WASM calculators' configuration are all derived from it.
var DurationFlags = []DurationFlag{
	{"time-to-first-token", "time to first token", func(c *Config) *time.Duration { return &c.TimeToFirstToken }, false},
	{"time-to-first-token-std-dev", "std-dev of the time to first token (<= 30%)", func(c *Config) *time.Duration { return &c.TimeToFirstTokenStdDev }, false},
	{"inter-token-latency", "time per additional token", func(c *Config) *time.Duration { return &c.InterTokenLatency }, true},
	{"inter-token-latency-std-dev", "std-dev of the inter-token latency (<= 30%)", func(c *Config) *time.Duration { return &c.InterTokenLatencyStdDev }, true},
	{"kv-cache-transfer-latency", "P/D: KV-cache transfer time replacing TTFT", func(c *Config) *time.Duration { return &c.KVCacheTransferLatency }, false},
	{"kv-cache-transfer-latency-std-dev", "std-dev of the KV transfer latency (<= 30%)", func(c *Config) *time.Duration { return &c.KVCacheTransferLatencyStdDev }, false},
	{"prefill-overhead", "per-token calculator: fixed prefill time", func(c *Config) *time.Duration { return &c.PrefillOverhead }, false},
	{"prefill-time-per-token", "per-token calculator: prefill time per uncached prompt token", func(c *Config) *time.Duration { return &c.PrefillTimePerToken }, true},
	{"prefill-time-std-dev", "std-dev of the total prefill time", func(c *Config) *time.Duration { return &c.PrefillTimeStdDev }, false},
	{"kv-cache-transfer-time-per-token", "P/D per-token KV transfer time", func(c *Config) *time.Duration { return &c.KVCacheTransferTimePerToken }, true},
	{"kv-cache-transfer-time-std-dev", "std-dev of the total KV transfer time", func(c *Config) *time.Duration { return &c.KVCacheTransferTimeStdDev }, false},
}

// ignoredFlags may appear in the configuration (the simulator passes its latency group as
// a whole) but do not affect a calculator.
var ignoredFlags = map[string]bool{"latency-calculator": true, "seed": true, "max-num-seqs": true}

// maxStdDevFraction is the specification's bound on every std-dev.
const maxStdDevFraction = 0.3

// ParseConfig reads a JSON object of flag names to values. A duration is a Go duration
// string ("10ms", "500us", "1.5s"), a string of digits (milliseconds) or a JSON number of
// milliseconds; time-factor-under-load is a number >= 1. Unknown flags are errors.
func ParseConfig(b []byte) (Config, error) {
	c := Config{TimeFactorUnderLoad: 1}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return c, fmt.Errorf("latency configuration must be a JSON object: %w", err)
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := raw[k]
		if ignoredFlags[k] {
			continue
		}
		if k == FactorFlag {
			f, err := strconv.ParseFloat(strings.Trim(string(v), `"`), 64)
			if err != nil || math.IsNaN(f) || f < 1 || math.IsInf(f, 0) {
				return c, fmt.Errorf("%s: %s is not a number >= 1", FactorFlag, v)
			}
			c.TimeFactorUnderLoad = f
			continue
		}
		dst := c.field(k)
		if dst == nil {
			return c, fmt.Errorf("unknown latency flag %q", k)
		}
		d, err := parseDuration(v)
		if err != nil {
			return c, fmt.Errorf("%s: %w", k, err)
		}
		*dst = d
	}
	return c, c.Validate()
}

func (c *Config) field(name string) *time.Duration {
	for _, f := range DurationFlags {
		if f.Name == name {
			return f.Field(c)
		}
	}
	return nil
}

// JSON is the configuration under its flag names, durations as Go duration strings
// (nanosecond-exact), the form ParseConfig reads and a WASM calculator receives.
func (c Config) JSON() []byte {
	m := make(map[string]any, len(DurationFlags)+1)
	for _, f := range DurationFlags {
		m[f.Name] = f.Field(&c).String()
	}
	m[FactorFlag] = max(c.TimeFactorUnderLoad, 1)
	raw, _ := json.Marshal(m) // strings and a finite float: cannot fail
	return raw
}

func parseDuration(v json.RawMessage) (time.Duration, error) {
	s := string(v)
	if strings.HasPrefix(s, `"`) {
		if err := json.Unmarshal(v, &s); err != nil {
			return 0, err
		}
		s = strings.TrimSpace(s)
		if d, err := time.ParseDuration(s); err == nil {
			if d < 0 {
				return 0, fmt.Errorf("%q is negative", s)
			}
			return d, nil
		}
	}
	ms, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(ms) || math.IsInf(ms, 0) {
		return 0, fmt.Errorf("%s is neither a duration such as \"10ms\" nor a number of milliseconds", v)
	}
	if ms < 0 {
		return 0, fmt.Errorf("%s is negative", v)
	}
	if ms > float64(math.MaxInt64)/1e6 {
		return 0, fmt.Errorf("%s ms is too long", v)
	}
	return time.Duration(math.Round(ms * 1e6)), nil
}

// Validate checks the bounds the specification puts on the parameters: nothing negative,
// every std-dev within 30% of its mean, a load factor of at least 1.
func (c Config) Validate() error {
	var errs []error
	for _, f := range DurationFlags {
		if *f.Field(&c) < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative", f.Name))
		}
	}
	check := func(name string, mean, std time.Duration) {
		if float64(std) > maxStdDevFraction*float64(mean)+0.5 {
			errs = append(errs, fmt.Errorf("%s-std-dev %v exceeds 30%% of %s %v", name, std, name, mean))
		}
	}
	check("time-to-first-token", c.TimeToFirstToken, c.TimeToFirstTokenStdDev)
	check("inter-token-latency", c.InterTokenLatency, c.InterTokenLatencyStdDev)
	check("kv-cache-transfer-latency", c.KVCacheTransferLatency, c.KVCacheTransferLatencyStdDev)
	if f := c.TimeFactorUnderLoad; f != 0 && (f < 1 || math.IsNaN(f) || math.IsInf(f, 0)) {
		errs = append(errs, fmt.Errorf("%s must be >= 1, got %v", FactorFlag, f))
	}
	return errors.Join(errs...)
}
