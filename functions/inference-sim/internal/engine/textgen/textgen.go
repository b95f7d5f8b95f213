package textgen

import (
	"math"

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

// Response-length distribution of random mode when max_tokens is given:
// six buckets with these probabilities; the last bucket is exactly the
// maximum (so finish_reason "length" has probability 15 %).
var lengthBucketCumulative = [6]float64{0.2, 0.5, 0.7, 0.75, 0.85, 1.0}

const (
	flexBucket     = 3
	fixedBucketLen = 20
	meanRespLen    = 40
	stdDevRespLen  = 20
)

// ResponseLengthHistogram draws a length in [lo, hi] per the reference's
// histogram (equal buckets up to 101 tokens, then 20-token buckets with
// bucket 4 stretched over the rest).
func ResponseLengthHistogram(r *RNG, lo, hi int) int {
	if hi <= lo {
		return hi
	}
	if hi-lo+1 <= len(lengthBucketCumulative) {
		return r.IntRange(lo, hi)
	}
	u := r.Float64()
	if u > lengthBucketCumulative[len(lengthBucketCumulative)-2] {
		return hi
	}
	b := len(lengthBucketCumulative) - 1
	for i, c := range lengthBucketCumulative {
		if u <= c {
			b = i
			break
		}
	}
	n := len(lengthBucketCumulative)
	var start, end int
	rangeLen := hi - lo + 1
	if rangeLen <= fixedBucketLen*(n-1)+1 {
		size := float64(hi-lo) / float64(n-1)
		start = lo + int(size*float64(b))
		end = lo + int(size*float64(b+1)) - 1
	} else {
		flex := rangeLen - fixedBucketLen*(n-2)
		switch {
		case b < flexBucket:
			start = lo + fixedBucketLen*b
			end = lo + fixedBucketLen*(b+1) - 1
		case b == flexBucket:
			start = lo + fixedBucketLen*b
			end = start + flex - 1
		default:
			start = lo + fixedBucketLen*(b-1) + flex
			end = lo + fixedBucketLen*b + flex - 1
		}
	}
	end = min(end, hi-1)
	if end < start {
		return start
	}
	return r.IntRange(start, end)
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
