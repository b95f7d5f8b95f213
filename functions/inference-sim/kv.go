package inferencesim

import (
	"github.com/lensfn/lensfn/functions/inference-sim/internal/openai"
)

// kvStart pins the prompt's blocks in the rank's prefix cache and sets
// cached_tokens; a hit rate below the request's (or the global) threshold
// marks a cache miss.
func (r *rank) kvStart(g *genCtx) *openai.Error {
	model := r.cfg.Model
	loraID := 0
	if g.lora != "" {
		model, loraID = g.lora, r.loras.ID(g.lora)
	}
	blocks, cached, err := r.kv.Start(g.kvBlocks, model, g.idScratch, loraID, g.lora)
	g.kvBlocks = blocks
	if err != nil {
		return openai.NewError(500, err.Error())
	}
	g.cachedTokens = cached
	threshold := r.cfg.GlobalCacheHitThreshold
	if t := g.cacheHitThreshold(); t != nil {
		threshold = *t
	}
	if threshold > 0 && g.promptTokens > 0 && float64(g.cachedTokens)/float64(g.promptTokens) < threshold {
		g.cacheMiss = true
	}
	return nil
}

func (g *genCtx) cacheHitThreshold() *float64 {
	if g.kind == kindChat {
		return g.chat.CacheHitThreshold
	}
	return g.text.CacheHitThreshold
}

// kvFinish unpins the request's blocks.
func (r *rank) kvFinish(g *genCtx) {
	if r.kv != nil {
		g.kvBlocks = r.kv.Finish(g.kvBlocks)
	}
}
