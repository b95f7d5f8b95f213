package latency

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Input describes one sequence whose timing is to be simulated.
type Input struct {
	// PromptTokens is the number of prompt tokens of the sequence.
	PromptTokens int
	// CachedPromptTokens is how many of them were found in the prefix cache.
	CachedPromptTokens int
	// OutputTokens is the number of tokens the sequence will produce.
	OutputTokens int
	// RunningRequests counts the requests running when this one was
	// admitted, itself included.
	RunningRequests int
	// MaxNumSeqs is the simulator's --max-num-seqs.
	MaxNumSeqs int
	// RemotePrefill is true on a P/D decode instance: the prompt's KV cache
	// is transferred instead of being prefilled, so the KV-transfer latency
	// replaces the time to first token.
	RemotePrefill bool
	// Rand seeds the calculator's jitter; the same Rand gives the same
	// schedule, which is what makes --seed reproducible.
	Rand uint64
}

// Calculator produces the complete schedule of one sequence.
type Calculator interface {
	// Schedule returns the delay before the first token and appends to
	// gaps[:0] the OutputTokens-1 delays between consecutive tokens.
	// Passing a reused slice keeps the hot path free of allocations.
	Schedule(in Input, gaps []time.Duration) (ttft time.Duration, out []time.Duration, err error)
}

// Names of the built-in calculators.
const (
	NameConstant = "constant"
	NamePerToken = "per-token"
	// NameAuto is the empty name: constant when a time to first token (or
	// its std-dev) is configured, per-token otherwise, and the same rule
	// separately for the KV-transfer latency.
	NameAuto = ""
)

// Params are the latency settings of the specification.
type Params struct {
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
	// TimeFactorUnderLoad (>= 1) multiplies TTFT, prefill and inter-token
	// times linearly from 1 (one running request) to the factor
	// (max-num-seqs running).
	TimeFactorUnderLoad float64
}

// maxStdDevFraction is the specification's bound on every std-dev.
const maxStdDevFraction = 0.3

// Validate checks the bounds the specification puts on the parameters.
func (p Params) Validate() error {
	var errs []error
	check := func(name string, mean, sd time.Duration) {
		if mean < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative", name))
		}
		if sd < 0 {
			errs = append(errs, fmt.Errorf("%s-std-dev must not be negative", name))
		}
		if float64(sd) > maxStdDevFraction*float64(mean)+0.5 {
			errs = append(errs, fmt.Errorf("%s std-dev %v exceeds 30%% of %v", name, sd, mean))
		}
	}
	check("time-to-first-token", p.TimeToFirstToken, p.TimeToFirstTokenStdDev)
	check("inter-token-latency", p.InterTokenLatency, p.InterTokenLatencyStdDev)
	check("kv-cache-transfer-latency", p.KVCacheTransferLatency, p.KVCacheTransferLatencyStdDev)
	if p.PrefillOverhead < 0 || p.PrefillTimePerToken < 0 || p.PrefillTimeStdDev < 0 ||
		p.KVCacheTransferTimePerToken < 0 || p.KVCacheTransferTimeStdDev < 0 {
		errs = append(errs, errors.New("prefill and kv-cache-transfer times must not be negative"))
	}
	if p.TimeFactorUnderLoad != 0 && (p.TimeFactorUnderLoad < 1 || math.IsNaN(p.TimeFactorUnderLoad) || math.IsInf(p.TimeFactorUnderLoad, 0)) {
		errs = append(errs, fmt.Errorf("time-factor-under-load must be >= 1, got %v", p.TimeFactorUnderLoad))
	}
	return errors.Join(errs...)
}

// New returns the built-in calculator with the given name.
func New(name string, p Params) (Calculator, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.TimeFactorUnderLoad == 0 {
		p.TimeFactorUnderLoad = 1
	}
	switch name {
	case NameConstant:
		return &model{p: p, prefillConstant: true, transferConstant: true}, nil
	case NamePerToken:
		return &model{p: p}, nil
	case NameAuto:
		return &model{
			p:                p,
			prefillConstant:  p.TimeToFirstToken != 0 || p.TimeToFirstTokenStdDev != 0,
			transferConstant: p.KVCacheTransferLatency != 0 || p.KVCacheTransferLatencyStdDev != 0,
		}, nil
	}
	return nil, fmt.Errorf("unknown latency calculator %q (want %q or %q)", name, NameConstant, NamePerToken)
}

// model implements both built-in calculators; they differ only in how the
// first token's delay is derived.
type model struct {
	p                Params
	prefillConstant  bool
	transferConstant bool
}

// LoadFactor is 1 with one running request and TimeFactorUnderLoad with
// maxNumSeqs running, linear in between.
func LoadFactor(factor float64, running, maxNumSeqs int) float64 {
	if factor <= 1 {
		return 1
	}
	if maxNumSeqs <= 1 {
		if running >= 1 {
			return factor
		}
		return 1
	}
	r := min(max(running, 1), maxNumSeqs)
	return 1 + (factor-1)*float64(r-1)/float64(maxNumSeqs-1)
}

func (m *model) Schedule(in Input, gaps []time.Duration) (time.Duration, []time.Duration, error) {
	if in.OutputTokens < 0 || in.PromptTokens < 0 || in.CachedPromptTokens < 0 {
		return 0, gaps[:0], errors.New("latency: negative token count")
	}
	rng := splitMix{state: in.Rand}
	load := LoadFactor(m.p.TimeFactorUnderLoad, in.RunningRequests, in.MaxNumSeqs)
	var ttft time.Duration
	switch {
	case in.RemotePrefill && m.transferConstant:
		ttft = rng.clampedNormal(m.p.KVCacheTransferLatency, m.p.KVCacheTransferLatencyStdDev)
	case in.RemotePrefill:
		total := time.Duration(in.PromptTokens) * m.p.KVCacheTransferTimePerToken
		ttft = rng.clampedNormal(total, m.p.KVCacheTransferTimeStdDev)
	case m.prefillConstant:
		ttft = scale(rng.clampedNormal(m.p.TimeToFirstToken, m.p.TimeToFirstTokenStdDev), load)
	default:
		uncached := max(in.PromptTokens-in.CachedPromptTokens, 0)
		total := m.p.PrefillOverhead + time.Duration(uncached)*m.p.PrefillTimePerToken
		ttft = scale(rng.clampedNormal(total, m.p.PrefillTimeStdDev), load)
	}
	gaps = gaps[:0]
	for i := 1; i < in.OutputTokens; i++ {
		gaps = append(gaps, scale(rng.clampedNormal(m.p.InterTokenLatency, m.p.InterTokenLatencyStdDev), load))
	}
	return ttft, gaps, nil
}

func scale(d time.Duration, f float64) time.Duration {
	if f == 1 {
		return d
	}
	return time.Duration(math.Round(float64(d) * f))
}

// splitMix is a tiny allocation-free generator (SplitMix64) so that a
// schedule depends only on Input.Rand.
type splitMix struct{ state uint64 }

func (s *splitMix) next() uint64 {
	s.state += 0x9e3779b97f4a7c15
	z := s.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// float64 returns a value in (0, 1].
func (s *splitMix) float64() float64 {
	return (float64(s.next()>>11) + 1) / (1 << 53)
}

// clampedNormal draws from N(mean, sd) clamped to [0.3, 1.7] x mean, the
// specification's "never more than 70 % away" rule, with nanosecond
// resolution (no rounding to milliseconds).
func (s *splitMix) clampedNormal(mean, sd time.Duration) time.Duration {
	if sd <= 0 || mean <= 0 {
		return max(mean, 0)
	}
	u1, u2 := s.float64(), s.float64()
	z := math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
	v := float64(mean) + z*float64(sd)
	v = min(max(v, 0.3*float64(mean)), 1.7*float64(mean))
	return time.Duration(math.Round(v))
}
