package inferencesim

import (
	"strings"
	"testing"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/metrics"
)

func TestKVCacheCachedTokens(t *testing.T) {
	ts := startSimEnv(t, config.Environment{PodIP: "127.0.0.1"}, "--enable-kvcache", "--block-size", "8", "--kv-cache-size", "64",
		"--zmq-endpoint", "tcp://127.0.0.1:1") // nobody listens: events are dropped, serving goes on
	long := strings.Repeat("word ", 40)
	body := `{"model":"fake-model","messages":[{"role":"user","content":"` + long + `"}],"max_tokens":2}`
	_, _, first := post(t, ts.url()+"/v1/chat/completions", body)
	if !strings.Contains(first, `"cached_tokens":0`) {
		t.Fatalf("first: %s", first)
	}
	_, _, second := post(t, ts.url()+"/v1/chat/completions", body)
	// 40 words + 5 header tokens = 45 tokens = 5 full blocks of 8
	if !strings.Contains(second, `"cached_tokens":40`) {
		t.Fatalf("second: %s", second)
	}
	_, m := get(t, ts.url()+"/metrics")
	if !strings.Contains(m, `vllm:prefix_cache_hits_total{model_name="fake-model"} 40`) ||
		!strings.Contains(m, `vllm:prefix_cache_queries_total{model_name="fake-model"} 90`) {
		t.Fatalf("prefix cache metrics:\n%s", exposedLines(m, metrics.NamePrefixHits, metrics.NamePrefixQueries))
	}
	// cache_hit_threshold above the hit rate: answered at once, no tokens
	_, _, miss := post(t, ts.url()+"/v1/chat/completions",
		`{"model":"fake-model","messages":[{"role":"user","content":"fresh prompt"}],"max_tokens":2,"cache_hit_threshold":0.9}`)
	if !strings.Contains(miss, `"finish_reason":"cache_threshold"`) || !strings.Contains(miss, `"completion_tokens":0`) {
		t.Fatalf("threshold: %s", miss)
	}
}

func TestKVCacheNeedsPodIP(t *testing.T) {
	cfg, err := config.Parse([]string{"--model", "m", "--enable-kvcache"}, config.Environment{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "POD_IP") {
		t.Fatalf("want a POD_IP error, got %v", err)
	}
}
