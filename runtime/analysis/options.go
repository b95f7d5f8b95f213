package analysis

import (
	"errors"
	"fmt"
	"iter"
	"math"
)

// MaxTimelineBins caps the bins of every timeline; a run spanning fewer seconds gets one bin per
// (started) second, as the Lens reference does.
const MaxTimelineBins = 120

// Options configure an Accumulator. The zero value is valid: timelines then span exactly the
// observed records and no goodput is computed.
type Options struct {
	// DurationSeconds is the run's duration. The timelines span at least this long (and longer
	// when requests completed during the grace period), and it is reported as duration_seconds.
	// Zero means "use the observed window" (last completion - first start).
	DurationSeconds float64
	// Schedule yields the planned send time of every request of the run, in seconds from the
	// run's start (the same clock as Record.ScheduledAtSeconds, after range and scale factor).
	// It feeds the arrived counts of completion_timeline, so requests that were planned but
	// never sent (a stopped run, a grace-period cut) still show as arrivals. Nil means the
	// records' own scheduled times. Summary iterates it twice (once for the span, once to
	// count), so it must be re-iterable: slices.Values(list) is.
	Schedule iter.Seq[float64]
	// SLO enables goodput; nil leaves goodput and goodput_timeline out of the summary.
	SLO *SLO
	// ScheduledRequests is how many requests the run's schedule held; nil when the backend
	// cannot tell (scheduled_requests and not_released_requests are then null).
	ScheduledRequests *int64
	// NotReleased counts the scheduled requests never released, by reason (not_released_by_reason).
	NotReleased map[string]int64
}

// SLO holds the service-level objectives a task may carry in backend_options. Zero fields are
// unset. Lens treats them as presentation only: they never change a request's success.
type SLO struct {
	TTFTSeconds      float64 // backend_options.ttft_slo
	TPOTSeconds      float64 // backend_options.tpot_slo
	ErrorRatePercent float64 // backend_options.error_rate_slo
}

// ErrInvalidOption marks a bad option value (a negative duration, a non-numeric SLO, a schedule
// time that is negative or not finite). Callers answering HTTP map it to a 4xx.
var ErrInvalidOption = errors.New("invalid analysis option")

// SLOFromBackendOptions reads ttft_slo, tpot_slo (seconds) and error_rate_slo (percent) from a
// task's backend_options, as decoded from JSON. It returns nil when none is set, and an error
// wrapping ErrInvalidOption when one is not a finite non-negative number.
func SLOFromBackendOptions(backendOptions map[string]any) (*SLO, error) {
	var slo SLO
	set := false
	for _, field := range []struct {
		key  string
		into *float64
	}{
		{"ttft_slo", &slo.TTFTSeconds},
		{"tpot_slo", &slo.TPOTSeconds},
		{"error_rate_slo", &slo.ErrorRatePercent},
	} {
		raw, ok := backendOptions[field.key]
		if !ok || raw == nil {
			continue
		}
		value, ok := number(raw)
		if !ok || math.IsNaN(value) || value < 0 || value > maxMagnitude {
			return nil, fmt.Errorf("%w: backend_options.%s must be a non-negative number of at most %g, got %v", ErrInvalidOption, field.key, float64(maxMagnitude), raw)
		}
		if field.key == "error_rate_slo" && value > 100 {
			return nil, fmt.Errorf("%w: backend_options.error_rate_slo is a percentage and must be at most 100, got %v", ErrInvalidOption, raw)
		}
		*field.into = value
		set = set || value > 0
	}
	if !set {
		return nil, nil
	}
	return &slo, nil
}

func number(raw any) (float64, bool) {
	switch v := raw.(type) {
	case float64:
		return v, true
	case float32:
		return float64(v), true
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case interface{ Float64() (float64, error) }: // json.Number, without importing encoding/json here
		f, err := v.Float64()
		return f, err == nil
	}
	return 0, false
}

func (o Options) validate() error {
	if math.IsNaN(o.DurationSeconds) || o.DurationSeconds < 0 || o.DurationSeconds > maxMagnitude {
		return fmt.Errorf("%w: duration seconds must be a finite number between 0 and %g, got %v", ErrInvalidOption, float64(maxMagnitude), o.DurationSeconds)
	}
	if o.SLO != nil {
		for name, v := range map[string]float64{"ttft": o.SLO.TTFTSeconds, "tpot": o.SLO.TPOTSeconds, "error rate": o.SLO.ErrorRatePercent} {
			if math.IsNaN(v) || v < 0 || v > maxMagnitude {
				return fmt.Errorf("%w: %s SLO must be a finite number between 0 and %g, got %v", ErrInvalidOption, name, float64(maxMagnitude), v)
			}
		}
	}
	return nil
}
