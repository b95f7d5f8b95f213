package latency

import "math"

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
	dst = append(dst[:0], toNanos(ttft))
	itl, itlStd := m.cfg.InterTokenLatency, m.cfg.InterTokenLatencyStdDev
	for i := 1; i < in.OutputTokens; i++ {
		dst = append(dst, toNanos(jitter(&rng, itl, itlStd)*factor))
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

// uniform returns a float64 in (-1, 1).
func (s *splitmix) uniform() float64 {
	return float64(int64(s.next()>>11)-(1<<52)) / (1 << 52)
}

// normal draws a standard normal variate with Marsaglia's polar method.
func (s *splitmix) normal() float64 {
	for {
		u, v := s.uniform(), s.uniform()
		q := float64(u*u) + float64(v*v)
		if q > 0 && q < 1 {
			return u * math.Sqrt(-2*ln(q)/q)
		}
	}
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
