package textgen

import (
	"math"
	"slices"

	"github.com/lensfn/lensfn/wasm-modules/splitmix"
)

// presetSentences are the reference simulator's canned responses for
// random mode; responses are built from their tokens.
var presetSentences = []string{
	`Testing@, #testing 1$ ,2%,3^, [4&*5], 6~, 7-_ + (8 : 9) / \ < > . `,
	`Testing, testing 1,2,3. `,
	`I am fine, how are you today? `,
	`I am your AI assistant, how can I help you today? `,
	`Today is a nice sunny day. `,
	`The temperature here is twenty-five degrees centigrade. `,
	`Today it is partially cloudy and raining. `,
	`To be or not to be that is the question. `,
	`Alas, poor Yorick! I knew him, Horatio: A fellow of infinite jest `,
	`The rest is silence. `,
	`Give a man a fish and you feed him for a day; teach a man to fish and you feed him for a lifetime `,
}

// presetTokens holds the tokens of each preset sentence.
var presetTokens = func() [][]string {
	out := make([][]string, len(presetSentences))
	for i, s := range presetSentences {
		out[i] = AppendTokens(nil, s)
	}
	return out
}()

// Response-length distribution of random mode when max_tokens is given, as the
// specification states it: six buckets with these probabilities. Up to 120 tokens the
// buckets are of equal size; above, every bucket but the fourth is 20 tokens long and the
// fourth covers the rest. A length is drawn uniformly inside its bucket, so the maximum
// itself (finish_reason "length") has probability 15 % / the last bucket's size
// (0.75 % for max_tokens 120).
var lengthBucketProbability = [6]float64{0.20, 0.30, 0.20, 0.05, 0.10, 0.15}

const (
	equalBucketsUpTo = 120
	fixedBucketLen   = 20
	flexBucket       = 3
	meanRespLen      = 40
	stdDevRespLen    = 20
)

// LengthBuckets returns the six inclusive [start, end] ranges of the response-length
// histogram over [lo, hi]; ok is false when the range is shorter than six tokens (no
// six non-empty buckets), where lengths are uniform instead.
func LengthBuckets(lo, hi int) (b [6][2]int, ok bool) {
	n := hi - lo + 1
	if n < len(b) {
		return b, false
	}
	if n <= equalBucketsUpTo {
		for i := range b {
			b[i] = [2]int{lo + i*n/len(b), lo + (i+1)*n/len(b) - 1}
		}
		return b, true
	}
	next := lo
	for i := range b {
		size := fixedBucketLen
		if i == flexBucket {
			size = n - fixedBucketLen*(len(b)-1)
		}
		b[i] = [2]int{next, next + size - 1}
		next += size
	}
	return b, true
}

// ResponseLengthHistogram draws a length in [lo, hi] from the specification's
// six-bucket histogram (LengthBuckets), uniform over ranges shorter than six tokens.
func ResponseLengthHistogram(r *RNG, lo, hi int) int {
	if hi <= lo {
		return hi
	}
	buckets, ok := LengthBuckets(lo, hi)
	if !ok {
		return r.IntRange(lo, hi)
	}
	u := r.Float64()
	chosen := len(buckets) - 1
	for i, p := range lengthBucketProbability {
		if u < p {
			chosen = i
			break
		}
		u -= p
	}
	return r.IntRange(buckets[chosen][0], buckets[chosen][1])
}

// ResponseLengthGaussian draws from N(40, 20) within [lo, hi] (uniform
// when the range is small), used when the request sets no max_tokens.
func ResponseLengthGaussian(r *RNG, lo, hi int) int {
	if lo >= hi {
		return hi
	}
	if hi < meanRespLen-stdDevRespLen {
		return r.IntRange(lo, hi)
	}
	for {
		v := r.Normal(meanRespLen, stdDevRespLen)
		if v >= float64(lo) && v <= float64(hi) {
			return int(math.Round(v))
		}
	}
}

// AppendPresetTokens appends exactly n tokens made of random preset
// sentences, trimming the last one.
func AppendPresetTokens(dst []string, r *RNG, n int) []string {
	dst = slices.Grow(dst, max(n, 0)) // one allocation at most, not one per doubling
	for n > 0 {
		toks := presetTokens[r.Intn(len(presetTokens))]
		if len(toks) > n {
			toks = toks[:n]
		}
		dst = append(dst, toks...)
		n -= len(toks)
	}
	return dst
}

// RNG is the module's SplitMix64 (wasm-modules/splitmix) with the draws the
// generators need; each request gets one seeded from --seed and its arrival
// number (Mix), so lengths, failures and ids do not depend on goroutine
// interleaving.
type RNG struct{ splitmix.Rand }

// NewRNG is a generator seeded with seed.
func NewRNG(seed uint64) RNG { return RNG{splitmix.New(seed)} }

// IntRange returns a value in [lo, hi].
func (r *RNG) IntRange(lo, hi int) int {
	if hi <= lo {
		return lo
	}
	return lo + r.Intn(hi-lo+1)
}

func (r *RNG) Normal(mean, sd float64) float64 {
	u1 := 1 - r.Float64()
	u2 := r.Float64()
	return mean + sd*math.Sqrt(-2*math.Log(u1))*math.Cos(2*math.Pi*u2)
}

// Mix derives an independent seed from a seed and a counter.
func Mix(seed, n uint64) uint64 {
	return splitmix.Mix(seed ^ (n * 0xd1b54a32d192ed03))
}

// PresetToken is the first token of the i-th preset sentence (modulo their number): the
// logprobs' alternatives.
func PresetToken(i int) string { return presetTokens[i%len(presetTokens)][0] }
