package latency

import (
	"math"
	"slices"
)

// Input describes one request (the calculator ABI's lens_calc_schedule arguments).
type Input struct {
	PromptTokens       int
	CachedPromptTokens int
	OutputTokens       int
	RunningRequests    int
	MaxNumSeqs         int
	RemotePrefill      bool
	Rand               uint64
}

// TTFTFunc computes the mean time to first token before jitter and load (per calculator).
type TTFTFunc func(c *Config, in Input) (mean, stdDev int64, loaded bool)

// Model is a configured calculator.
type Model struct {
	cfg  Config
	ttft TTFTFunc
}

// NewModel pairs a configuration with a TTFT rule.
func NewModel(cfg Config, ttft TTFTFunc) *Model { return &Model{cfg: cfg, ttft: ttft} }

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

// Schedule appends the TTFT and then OutputTokens-1 inter-token gaps, in nanoseconds,
// to dst[:0]. The same Input (Rand included) always gives the same schedule.
func (m *Model) Schedule(in Input, dst []int64) []int64 {
	rng := splitmix{state: in.Rand}
	factor := loadFactor(m.cfg.TimeFactorUnderLoad, in.RunningRequests, in.MaxNumSeqs)
	mean, std, loaded := m.ttft(&m.cfg, in)
	ttft := jitter(&rng, mean, std)
	if loaded {
		ttft *= factor
	}
	n := max(in.OutputTokens-1, 0)
	dst = slices.Grow(dst[:0], n+1)[:n+1]
	dst[0] = toNanos(ttft)
	gaps := dst[1:]
	itl, itlStd := m.cfg.InterTokenLatency, m.cfg.InterTokenLatencyStdDev
	if itlStd <= 0 || itl <= 0 {
		v := toNanos(float64(itl) * factor)
		for i := range gaps {
			gaps[i] = v
		}
		return dst
	}
	// The hot loop of a long response: jitter inlined, clamps as plain comparisons.
	mu, sigma := float64(itl), float64(itlStd)
	lo, hi := 0.3*mu, 1.7*mu
	for i := range gaps {
		v := mu + float64(sigma*rng.normal())
		if v < lo {
			v = lo
		} else if v > hi {
			v = hi
		}
		gaps[i] = toNanos(v * factor)
	}
	return dst
}

func toNanos(v float64) int64 {
	if v >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(math.Round(v))
}

// loadFactor grows linearly from 1 (one running request) to factor (max-num-seqs running).
func loadFactor(factor float64, running, maxNumSeqs int) float64 {
	if factor <= 1 || maxNumSeqs <= 1 {
		return 1
	}
	running = min(max(running, 1), maxNumSeqs)
	return 1 + (factor-1)*float64(running-1)/float64(maxNumSeqs-1)
}

// jitter draws from a normal distribution around mean and clamps the result to
// [0.3, 1.7] x mean, the simulator's rule.
func jitter(rng *splitmix, mean, std int64) float64 {
	m := float64(mean)
	if std <= 0 || mean <= 0 {
		return m
	}
	v := m + float64(float64(std)*rng.normal()) // explicit conversions keep compilers from fusing into FMA
	return math.Min(math.Max(v, 0.3*m), 1.7*m)
}

// splitmix is SplitMix64: tiny, fast and identical on every platform.
type splitmix struct{ state uint64 }

func (s *splitmix) next() uint64 {
	s.state += 0x9e3779b97f4a7c15
	z := s.state
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// normal draws a standard normal variate by inverse transform: the top 12 bits of one
// random word pick a cell of a 4096-cell quantile table, the next 32 interpolate inside
// it. One generator call and a few multiplications per draw keep a long schedule cheap in
// a wasm guest; the table spans 1/8192 to 1 - 1/8192 (about +-3.7 sigma), past the
// simulator's clamp of 0.7/0.3 = 2.33 sigma for std-devs within 30 %.
func (s *splitmix) normal() float64 {
	u := s.next()
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
