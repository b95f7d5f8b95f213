package inferencesim

import (
	"encoding/json"
	"slices"
	"sync"

	"github.com/valyala/fasthttp"
)

// loraRegistry holds the adapters a rank knows: --lora-modules plus those
// loaded through /v1/load_lora_adapter.
type loraRegistry struct {
	mu    sync.RWMutex
	items []LoRAModule
	ids   map[string]int // adapter -> stable 1-based id (KV events)
	next  int
}

func newLoRARegistry(initial []LoRAModule) *loraRegistry {
	r := &loraRegistry{ids: map[string]int{}}
	for _, m := range initial {
		r.add(m)
	}
	return r
}

func (r *loraRegistry) add(m LoRAModule) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := slices.IndexFunc(r.items, func(x LoRAModule) bool { return x.Name == m.Name }); i >= 0 {
		r.items[i] = m
		return
	}
	r.items = append(r.items, m)
	if _, ok := r.ids[m.Name]; !ok {
		r.next++
		r.ids[m.Name] = r.next
	}
}

func (r *loraRegistry) remove(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.items)
	r.items = slices.DeleteFunc(r.items, func(x LoRAModule) bool { return x.Name == name })
	return len(r.items) != n
}

func (r *loraRegistry) known(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.ContainsFunc(r.items, func(x LoRAModule) bool { return x.Name == name })
}

func (r *loraRegistry) id(name string) int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.ids[name]
}

func (r *loraRegistry) list() []LoRAModule {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.items)
}

func (r *rank) handleLoadLoRA(ctx *fasthttp.RequestCtx) {
	if !ctx.IsPost() {
		writeError(ctx, newError(405, "Method not allowed, use POST"))
		return
	}
	var req struct {
		Name string `json:"lora_name"`
		Path string `json:"lora_path"`
	}
	if err := json.Unmarshal(ctx.PostBody(), &req); err != nil {
		writeError(ctx, newError(400, "Failed to read and parse request body, "+err.Error()))
		return
	}
	if req.Name == "" {
		writeError(ctx, newParamError(400, "lora_name is required", "lora_name"))
		return
	}
	r.loras.add(LoRAModule{Name: req.Name, Path: req.Path, BaseModelName: r.cfg.Model})
}

func (r *rank) handleUnloadLoRA(ctx *fasthttp.RequestCtx) {
	if !ctx.IsPost() {
		writeError(ctx, newError(405, "Method not allowed, use POST"))
		return
	}
	var req struct {
		Name string `json:"lora_name"`
	}
	if err := json.Unmarshal(ctx.PostBody(), &req); err != nil {
		writeError(ctx, newError(400, "Failed to read and parse request body, "+err.Error()))
		return
	}
	// Like vLLM's simulator, unloading an unknown adapter is not an error.
	r.loras.remove(req.Name)
}
