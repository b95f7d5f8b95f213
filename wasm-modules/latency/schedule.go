package latency

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/lensfn/lensfn/wasm-modules/splitmix"
)

// Input describes one sequence whose timing is to be simulated (the calculator ABI's
// lens_calc_schedule arguments). It is the one latency input type: the simulator, the WASM
// host and the guests all pass it.
type Input struct {
	// PromptTokens is the number of prompt tokens of the sequence.
	PromptTokens int
	// CachedPromptTokens is how many of them were found in the prefix cache.
	CachedPromptTokens int
	// OutputTokens is the number of tokens the sequence will produce.
	OutputTokens int
	// RunningRequests counts the requests running when this one was admitted, itself
	// included.
	RunningRequests int
	// MaxNumSeqs is the simulator's --max-num-seqs.
	MaxNumSeqs int
	// RemotePrefill is true on a P/D decode instance: the prompt's KV cache is transferred
	// instead of being prefilled, so the KV-transfer latency replaces the time to first token.
	RemotePrefill bool
	// Rand seeds the jitter; the same Rand gives the same schedule, which is what makes
	// --seed reproducible.
	Rand uint64
}

// Calculator produces the complete schedule of one sequence. *Model implements it natively;
// runtime/wasmhost's Calculator implements it with one guest call.
type Calculator interface {
	// Schedule returns the delay before the first token and appends to gaps[:0] the
	// OutputTokens-1 delays between consecutive tokens. Passing a reused slice keeps the
	// hot path free of allocations.
	Schedule(in Input, gaps []time.Duration) (ttft time.Duration, out []time.Duration, err error)
}

// Names of the built-in calculators.
const (
	NameConstant = "constant"
	NamePerToken = "per-token"
	// NameAuto is the empty name: constant when a time to first token (or its std-dev) is
	// configured, per-token otherwise, and the same rule separately for the KV-transfer
	// latency.
	NameAuto = ""
)

// TTFTFunc computes the mean time to first token before jitter and load, its std-dev, and
// whether the load factor applies (it does not to a KV transfer).
type TTFTFunc func(c *Config, in Input) (mean, stdDev time.Duration, loaded bool)

// ConstantTTFT is the "constant" rule: time-to-first-token, or kv-cache-transfer-latency
// when the prefill ran remotely.
func ConstantTTFT(c *Config, in Input) (time.Duration, time.Duration, bool) {
	if in.RemotePrefill {
		return c.KVCacheTransferLatency, c.KVCacheTransferLatencyStdDev, false
	}
	return c.TimeToFirstToken, c.TimeToFirstTokenStdDev, true
}

// PerTokenTTFT is the "per-token" rule: prefill-overhead plus prefill-time-per-token for
// every uncached prompt token, or kv-cache-transfer-time-per-token for every prompt token
// when the prefill ran remotely. Products saturate instead of overflowing.
func PerTokenTTFT(c *Config, in Input) (time.Duration, time.Duration, bool) {
	if in.RemotePrefill {
		return satMul(c.KVCacheTransferTimePerToken, in.PromptTokens), c.KVCacheTransferTimeStdDev, false
	}
	uncached := max(in.PromptTokens-in.CachedPromptTokens, 0)
	return satAdd(c.PrefillOverhead, satMul(c.PrefillTimePerToken, uncached)), c.PrefillTimeStdDev, true
}

// AutoTTFT is the legacy rule of the empty name: constant for the prefill when a time to
// first token or its std-dev is set, per-token otherwise; the same choice separately for
// the KV transfer.
func AutoTTFT(c *Config, in Input) (time.Duration, time.Duration, bool) {
	constant := c.TimeToFirstToken != 0 || c.TimeToFirstTokenStdDev != 0
	if in.RemotePrefill {
		constant = c.KVCacheTransferLatency != 0 || c.KVCacheTransferLatencyStdDev != 0
	}
	if constant {
		return ConstantTTFT(c, in)
	}
	return PerTokenTTFT(c, in)
}

// New returns the built-in calculator with the given name (NameConstant, NamePerToken or
// NameAuto) after validating the configuration.
func New(name string, cfg Config) (Calculator, error) {
	var ttft TTFTFunc
	switch name {
	case NameConstant:
		ttft = ConstantTTFT
	case NamePerToken:
		ttft = PerTokenTTFT
	case NameAuto:
		ttft = AutoTTFT
	default:
		return nil, fmt.Errorf("unknown latency calculator %q (want %q or %q)", name, NameConstant, NamePerToken)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return NewModel(cfg, ttft), nil
}

// Model is a configured calculator: a configuration and a TTFT rule.
type Model struct {
	cfg  Config
	ttft TTFTFunc
}

// NewModel pairs a configuration with a TTFT rule; a zero TimeFactorUnderLoad means 1.
func NewModel(cfg Config, ttft TTFTFunc) *Model {
	if cfg.TimeFactorUnderLoad == 0 {
		cfg.TimeFactorUnderLoad = 1
	}
	return &Model{cfg: cfg, ttft: ttft}
}

// ParseModel reads a calculator's JSON configuration (ParseConfig) into a Model.
func ParseModel(configJSON []byte, ttft TTFTFunc) (*Model, error) {
	cfg, err := ParseConfig(configJSON)
	if err != nil {
		return nil, err
	}
	return NewModel(cfg, ttft), nil
}

// Config returns the model's configuration.
func (m *Model) Config() Config { return m.cfg }

// Schedule implements Calculator. The same Input (Rand included) always gives the same
// schedule, natively and in a wasip1 guest.
func (m *Model) Schedule(in Input, gaps []time.Duration) (time.Duration, []time.Duration, error) {
	if in.OutputTokens < 0 || in.PromptTokens < 0 || in.CachedPromptTokens < 0 {
		return 0, gaps[:0], errors.New("latency: negative token count")
	}
	rng := splitmix.New(in.Rand)
	factor := LoadFactor(m.cfg.TimeFactorUnderLoad, in.RunningRequests, in.MaxNumSeqs)
	mean, std, loaded := m.ttft(&m.cfg, in)
	ttft := jitter(&rng, mean, std)
	if loaded {
		ttft *= factor
	}
	n := max(in.OutputTokens-1, 0)
	if cap(gaps) < n {
		gaps = make([]time.Duration, n)
	}
	gaps = gaps[:n]
	itl, itlStd := m.cfg.InterTokenLatency, m.cfg.InterTokenLatencyStdDev
	if itlStd <= 0 || itl <= 0 {
		v := toDuration(float64(itl) * factor)
		for i := range gaps {
			gaps[i] = v
		}
		return toDuration(ttft), gaps, nil
	}
	// The hot loop of a long response: jitter inlined, clamps as plain comparisons.
	mu, sigma := float64(itl), float64(itlStd)
	lo, hi := 0.3*mu, 1.7*mu
	for i := range gaps {
		v := mu + float64(sigma*normal(&rng))
		if v < lo {
			v = lo
		} else if v > hi {
			v = hi
		}
		gaps[i] = toDuration(v * factor)
	}
	return toDuration(ttft), gaps, nil
}

func toDuration(v float64) time.Duration {
	if v >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(math.Round(v))
}

// LoadFactor grows linearly from 1 (one running request) to factor (max-num-seqs
// running), as the specification words it: "with max-num-seqs requests the total time is
// multiplied by the factor". With --max-num-seqs 1 the one running request is max-num-seqs
// requests, so the full factor applies.
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
	running = min(max(running, 1), maxNumSeqs)
	return 1 + (factor-1)*float64(running-1)/float64(maxNumSeqs-1)
}

// jitter draws from a normal distribution around mean and clamps the result to
// [0.3, 1.7] x mean, the simulator's rule.
func jitter(rng *splitmix.Rand, mean, std time.Duration) float64 {
	m := float64(mean)
	if std <= 0 || mean <= 0 {
		return max(m, 0)
	}
	v := m + float64(float64(std)*normal(rng)) // explicit conversions keep compilers from fusing into FMA
	return math.Min(math.Max(v, 0.3*m), 1.7*m)
}

func satMul(d time.Duration, n int) time.Duration {
	if n != 0 && d > math.MaxInt64/time.Duration(n) {
		return math.MaxInt64
	}
	return d * time.Duration(n)
}

func satAdd(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// normal draws a standard normal variate by inverse transform: the top 12 bits of one
// random word pick a cell of a 4096-cell quantile table, the next 32 interpolate inside
// it. One generator call and a few multiplications per draw keep a long schedule cheap in
// a wasm guest; the table spans 1/8192 to 1 - 1/8192 (about +-3.7 sigma), past the
// simulator's clamp of 0.7/0.3 = 2.33 sigma for std-devs within 30 %.
func normal(rng *splitmix.Rand) float64 {
	u := rng.Uint64()
	cell := u >> 52
	frac := float64((u>>20)&0xffffffff) / (1 << 32)
	lo, hi := normalTable[cell], normalTable[cell+1]
	return lo + float64(frac*(hi-lo))
}

// normalTable[i] is the standard normal quantile of (i + 0.5) / 4096, plus one
// extrapolated cell, computed once from Acklam's rational approximation (relative error
// below 1.2e-9) with the deterministic ln below.
var normalTable = func() (t [4097]float64) {
	for i := range 4096 {
		t[i] = normalQuantile((float64(i) + 0.5) / 4096)
	}
	t[4096] = t[4095]
	return t
}()

func normalQuantile(p float64) float64 {
	a := [6]float64{-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00}
	b := [5]float64{-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01, -1.328068155288572e+01}
	c := [6]float64{-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00}
	d := [4]float64{7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00}
	const low = 0.02425
	tail := func(q float64) float64 {
		return float64(float64(float64(float64(float64(c[0]*q+c[1])*q+c[2])*q+c[3])*q+c[4])*q+c[5]) /
			float64(float64(float64(float64(d[0]*q+d[1])*q+d[2])*q+d[3])*q+1)
	}
	switch {
	case p < low:
		return tail(math.Sqrt(-2 * ln(p)))
	case p > 1-low:
		return -tail(math.Sqrt(-2 * ln(1-p)))
	}
	q := p - 0.5
	r := q * q
	num := float64(float64(float64(float64(float64(a[0]*r+a[1])*r+a[2])*r+a[3])*r+a[4])*r + a[5])
	den := float64(float64(float64(float64(float64(b[0]*r+b[1])*r+b[2])*r+b[3])*r+b[4])*r + 1)
	return float64(num*q) / den
}

// ln is the natural logarithm for x in (0, 1] from frexp and an atanh series. It exists
// because math.Log uses assembly on amd64 and may differ in the last bit from the pure-Go
// version a wasm guest runs; this one gives the same bits on both.
func ln(x float64) float64 {
	frac, exp := math.Frexp(x) // x = frac * 2^exp, frac in [0.5, 1)
	if frac < math.Sqrt2/2 {
		frac *= 2
		exp--
	}
	// frac in [0.707, 1.414): s in (-0.172, 0.172), so 10 terms reach double precision.
	s := (frac - 1) / (frac + 1)
	s2 := s * s
	sum, term := 0.0, s
	for k := 1; k <= 21; k += 2 {
		sum += term / float64(k)
		term = float64(term * s2)
	}
	return float64(2*sum) + float64(float64(exp)*math.Ln2)
}

// Timeline returns the schedule as one slice, dst[:0] with the TTFT first and the gaps
// after it: the calculator ABI's result layout (TTFT + OutputTokens-1 gaps as i64 ns).
func (m *Model) Timeline(in Input, dst []time.Duration) ([]time.Duration, error) {
	n := max(in.OutputTokens-1, 0)
	if cap(dst) < n+1 {
		dst = make([]time.Duration, 1, n+1)
	}
	dst = dst[:1]
	ttft, gaps, err := m.Schedule(in, dst[1:1]) // fits in dst's capacity: filled in place
	if err != nil {
		return dst[:0], err
	}
	dst[0] = ttft
	return dst[:1+len(gaps)], nil
}
