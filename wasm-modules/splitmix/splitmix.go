package splitmix

// golden is 2^64 / phi, SplitMix64's increment.
const golden = 0x9e3779b97f4a7c15

// Rand is a SplitMix64 generator. The zero value is a valid generator seeded with 0.
type Rand struct{ state uint64 }

// New returns a generator seeded with seed.
func New(seed uint64) Rand { return Rand{state: seed} }

// Uint64 advances the generator and returns the next value.
func (r *Rand) Uint64() uint64 {
	r.state += golden
	return finalize(r.state)
}

// Float64 returns a value in [0, 1) with 53 random bits.
func (r *Rand) Float64() float64 { return float64(r.Uint64()>>11) / (1 << 53) }

// Intn returns a value in [0, n); 0 when n <= 1.
func (r *Rand) Intn(n int) int {
	if n <= 1 {
		return 0
	}
	return int(r.Uint64() % uint64(n))
}

// Mix returns the first value of a generator seeded with x: a one-shot 64-bit hash.
func Mix(x uint64) uint64 { return finalize(x + golden) }

// finalize is SplitMix64's output function (Stafford's variant 13).
func finalize(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
