package engine

import (
	"errors"
	"fmt"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
	"github.com/lensfn/lensfn/functions/inferencesim/kvcache"
)

// KV is one rank's prefix KV cache accounting: a request pins its prompt's blocks at
// admission (Start: how many of its tokens were cached) and unpins them when it ends
// (Finish); the cache's usage goes to a gauge after each change. The blocks live in
// package kvcache, which also publishes the KV events.
type KV struct {
	cache *kvcache.Cache
	pub   *kvcache.Publisher
	usage func(float64)
}

// NewKV opens rank's cache and its KV-event publisher from the configuration
// (--enable-kvcache and the ZMQ flags; POD_IP names the topic). Data-parallel rank n
// publishes on the endpoint's port + n. usage receives the cache's usage fraction.
func NewKV(cfg *config.Config, rank, port int, usage func(float64)) (*KV, error) {
	if cfg.PodIP == "" {
		return nil, errors.New("--enable-kvcache needs the POD_IP environment variable (the KV-event topic names it)")
	}
	endpoint := cfg.ZMQEndpoint
	if rank > 0 {
		ep, err := offsetPort(endpoint, rank)
		if err != nil {
			return nil, err
		}
		endpoint = ep
	}
	pub := kvcache.NewPublisher(kvcache.PublisherConfig{
		Endpoint: endpoint, Topic: kvcache.Topic(cfg.PodIP, port, cfg.Model),
		BatchSize: cfg.EventBatchSize, DPRank: rank, MapFormat: cfg.UseVLLMMapEventFormat,
		MaxAttempts: cfg.ZMQMaxConnectAttempts,
	})
	return newKV(kvcache.New(cfg.KVCacheSize, cfg.BlockSize, cfg.HashSeed, pub), pub, usage), nil
}

func newKV(cache *kvcache.Cache, pub *kvcache.Publisher, usage func(float64)) *KV {
	if usage == nil {
		usage = func(float64) {}
	}
	return &KV{cache: cache, pub: pub, usage: usage}
}

// offsetPort adds n to the port of a tcp://host:port endpoint.
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

// Start pins the blocks of a prompt's token ids for model (the adapter's name when
// loraID > 0), appending their hashes to blocks[:0] (the request's reused buffer, returned
// for Finish), and returns how many of the prompt's tokens were already cached. On an
// error nothing is pinned and the returned buffer is empty.
func (k *KV) Start(blocks []uint64, model string, ids []uint32, loraID int, lora string) ([]uint64, int, error) {
	blocks = k.cache.Hashes(blocks[:0], model, ids)
	cached, err := k.cache.Start(blocks, ids, loraID, lora)
	if err != nil {
		return blocks[:0], 0, err
	}
	k.usage(k.cache.Usage())
	return blocks, cached * k.cache.BlockSize(), nil
}

// Finish unpins the blocks Start pinned and returns the emptied buffer.
func (k *KV) Finish(blocks []uint64) []uint64 {
	if len(blocks) == 0 {
		return blocks
	}
	k.cache.Finish(blocks)
	k.usage(k.cache.Usage())
	return blocks[:0]
}

// Usage is the fraction of the cache's blocks in use.
func (k *KV) Usage() float64 { return k.cache.Usage() }

// Close stops the KV-event publisher.
func (k *KV) Close() {
	if k.pub != nil {
		k.pub.Close()
	}
}
