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

// Config holds the simulator's latency flags (spec/inference-simulator: time-to-first-token
// and friends). Durations are nanoseconds.
type Config struct {
	TimeToFirstToken             int64
	TimeToFirstTokenStdDev       int64
	InterTokenLatency            int64
	InterTokenLatencyStdDev      int64
	KVCacheTransferLatency       int64
	KVCacheTransferLatencyStdDev int64
	PrefillOverhead              int64
	PrefillTimePerToken          int64
	PrefillTimeStdDev            int64
	KVCacheTransferTimePerToken  int64
	KVCacheTransferTimeStdDev    int64
	TimeFactorUnderLoad          float64
}

// durationFlags maps flag names to Config fields.
func (c *Config) durationFlags() map[string]*int64 {
	return map[string]*int64{
		"time-to-first-token":               &c.TimeToFirstToken,
		"time-to-first-token-std-dev":       &c.TimeToFirstTokenStdDev,
		"inter-token-latency":               &c.InterTokenLatency,
		"inter-token-latency-std-dev":       &c.InterTokenLatencyStdDev,
		"kv-cache-transfer-latency":         &c.KVCacheTransferLatency,
		"kv-cache-transfer-latency-std-dev": &c.KVCacheTransferLatencyStdDev,
		"prefill-overhead":                  &c.PrefillOverhead,
		"prefill-time-per-token":            &c.PrefillTimePerToken,
		"prefill-time-std-dev":              &c.PrefillTimeStdDev,
		"kv-cache-transfer-time-per-token":  &c.KVCacheTransferTimePerToken,
		"kv-cache-transfer-time-std-dev":    &c.KVCacheTransferTimeStdDev,
	}
}

// ignoredFlags may appear in the configuration (the simulator passes its latency group as
// a whole) but do not affect a calculator.
var ignoredFlags = map[string]bool{"latency-calculator": true, "seed": true, "max-num-seqs": true}

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
	flags := c.durationFlags()
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
		if k == "time-factor-under-load" {
			f, err := strconv.ParseFloat(strings.Trim(string(v), `"`), 64)
			if err != nil || math.IsNaN(f) || f < 1 || math.IsInf(f, 0) {
				return c, fmt.Errorf("time-factor-under-load: %s is not a number >= 1", v)
			}
			c.TimeFactorUnderLoad = f
			continue
		}
		dst, ok := flags[k]
		if !ok {
			return c, fmt.Errorf("unknown latency flag %q", k)
		}
		d, err := parseDuration(v)
		if err != nil {
			return c, fmt.Errorf("%s: %w", k, err)
		}
		*dst = d
	}
	return c, c.validate()
}

func parseDuration(v json.RawMessage) (int64, error) {
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
			return int64(d), nil
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
	return int64(math.Round(ms * 1e6)), nil
}

func (c Config) validate() error {
	var errs []error
	check := func(name string, mean, std int64) {
		if float64(std) > 0.3*float64(mean) {
			errs = append(errs, fmt.Errorf("%s-std-dev %v exceeds 30%% of %s %v", name, time.Duration(std), name, time.Duration(mean)))
		}
	}
	check("time-to-first-token", c.TimeToFirstToken, c.TimeToFirstTokenStdDev)
	check("inter-token-latency", c.InterTokenLatency, c.InterTokenLatencyStdDev)
	check("kv-cache-transfer-latency", c.KVCacheTransferLatency, c.KVCacheTransferLatencyStdDev)
	return errors.Join(errs...)
}
