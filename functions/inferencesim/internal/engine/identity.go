package engine

import (
	"crypto/sha1"
	"strconv"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine/textgen"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/openai"
)

// Begin gives the request its identity: counter is the rank's count of requests, which
// with --seed seeds the request's generator, so a seed reproduces every answer.
func (r *Request) Begin(kind Kind, seed int64, counter uint64) {
	r.Kind = kind
	r.RNG = textgen.NewRNG(textgen.Mix(uint64(seed), counter))
}

// AppendRequestID appends a UUID (version 5 layout) derived from seed, port and a per-rank
// request counter, so ids are reproducible with --seed.
func AppendRequestID(dst []byte, seed int64, port int, counter uint64) []byte {
	var in [64]byte
	b := strconv.AppendInt(in[:0], seed, 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(port), 10)
	b = append(b, '-')
	b = strconv.AppendUint(b, counter, 10)
	sum := sha1.Sum(b)
	sum[6] = (sum[6] & 0x0f) | 0x50
	sum[8] = (sum[8] & 0x3f) | 0x80
	for i := 0; i < 16; i++ {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, openai.HexDigits[sum[i]>>4], openai.HexDigits[sum[i]&0xf])
	}
	return dst
}

// Logprob is a token's simulated log-probability as the rank-th alternative: a
// deterministic function of the token, so a response is reproducible.
func Logprob(tok string, rank int) float64 {
	h := textgen.TokenID(tok)
	return -float64(h%1000)/1000.0 - float64(rank)*0.5
}

// Alternative is the k-th alternative to tok in top_logprobs (the 0th is tok itself).
func Alternative(tok string, k int) string {
	if k == 0 {
		return tok
	}
	return textgen.PresetToken(int(textgen.TokenID(tok)) + k)
}
