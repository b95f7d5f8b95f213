package engine

import (
	"math"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine/textgen"
)

// Embed fills vec with a unit vector determined by the token ids (/v1/embeddings).
func Embed(vec []float32, ids []uint32) {
	seed := uint64(1469598103934665603)
	for _, id := range ids {
		seed = (seed ^ uint64(id)) * 1099511628211
	}
	g := textgen.NewRNG(seed)
	var norm float64
	for i := range vec {
		v := g.Normal(0, 1)
		vec[i] = float32(v)
		norm += v * v
	}
	norm = math.Sqrt(norm)
	if norm == 0 {
		return
	}
	for i := range vec {
		vec[i] = float32(float64(vec[i]) / norm)
	}
}
