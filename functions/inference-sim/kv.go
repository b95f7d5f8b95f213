package inferencesim

import (
	"errors"
	"fmt"

	"github.com/lensfn/lensfn/functions/inference-sim/internal/openai"
	"github.com/lensfn/lensfn/functions/inference-sim/kvcache"
)

func (r *rank) initKVCache(rankIndex int) error {
	if r.cfg.PodIP == "" {
		return errors.New("--enable-kvcache needs the POD_IP environment variable (the KV-event topic names it)")
	}
	endpoint := r.cfg.ZMQEndpoint
	if rankIndex > 0 {
		ep, err := offsetPort(endpoint, rankIndex)
		if err != nil {
			return err
		}
		endpoint = ep
	}
	r.kvPub = kvcache.NewPublisher(kvcache.PublisherConfig{
		Endpoint: endpoint, Topic: kvcache.Topic(r.cfg.PodIP, r.port, r.cfg.Model),
		BatchSize: r.cfg.EventBatchSize, DPRank: rankIndex, MapFormat: r.cfg.UseVLLMMapEventFormat,
		MaxAttempts: r.cfg.ZMQMaxConnectAttempts,
	})
	r.kv = kvcache.New(r.cfg.KVCacheSize, r.cfg.BlockSize, r.cfg.HashSeed, r.kvPub)
	return nil
}

// offsetPort adds n to the port of a tcp://host:port endpoint (data
// parallel rank n publishes on port + n).
func offsetPort(endpoint string, n int) (string, error) {
	i := len(endpoint) - 1
	for i >= 0 && endpoint[i] >= '0' && endpoint[i] <= '9' {
		i--
	}
	if i < 0 || endpoint[i] != ':' || i == len(endpoint)-1 {
		return "", fmt.Errorf("zmq endpoint %q has no port", endpoint)
	}
	var port int
	fmt.Sscanf(endpoint[i+1:], "%d", &port)
	return fmt.Sprintf("%s%d", endpoint[:i+1], port+n), nil
}

// kvStart pins the prompt's blocks and sets cached_tokens.
func (r *rank) kvStart(g *genCtx) *openai.Error {
	model := r.cfg.Model
	loraID := 0
	if g.lora != "" {
		model, loraID = g.lora, r.loras.id(g.lora)
	}
	g.kvBlocks = r.kv.Hashes(g.kvBlocks[:0], model, g.idScratch)
	cached, err := r.kv.Start(g.kvBlocks, g.idScratch, loraID, g.lora)
	if err != nil {
		g.kvBlocks = g.kvBlocks[:0]
		return openai.NewError(500, err.Error())
	}
	g.cachedTokens = cached * r.kv.BlockSize()
	r.metrics.KVUsage.WithLabelValues(r.metrics.BaseModel).Set(r.kv.Usage())
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
	if r.kv == nil || len(g.kvBlocks) == 0 {
		return
	}
	r.kv.Finish(g.kvBlocks)
	g.kvBlocks = g.kvBlocks[:0]
	r.metrics.KVUsage.WithLabelValues(r.metrics.BaseModel).Set(r.kv.Usage())
}
