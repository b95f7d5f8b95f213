package inferencesim

import (
	"encoding/json"
	"slices"
	"strconv"
	"sync"

	"github.com/valyala/fasthttp"

	"github.com/lensfn/lensfn/functions/inference-sim/internal/config"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/limits"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/openai"
)

// loraRegistry holds the adapters a rank knows: --lora-modules plus those
// loaded through /v1/load_lora_adapter, at most maxLoRAAdapters.
type loraRegistry struct {
	mu    sync.RWMutex
	items []config.LoRAModule
	ids   map[string]int // loaded adapter -> 1-based id (KV events); a reload gets a new one, as in vLLM
	next  int
}

var errTooManyLoRAs = openai.NewParamError(400, "Cannot load more than "+strconv.Itoa(limits.MaxLoRAAdapters)+
	" LoRA adapters; unload one first.", "lora_name")

func newLoRARegistry(initial []config.LoRAModule) *loraRegistry {
	r := &loraRegistry{ids: map[string]int{}}
	for _, m := range initial {
		r.add(m)
	}
	return r
}

// add registers (or replaces) an adapter; a new one beyond the bound is refused.
func (r *loraRegistry) add(m config.LoRAModule) *openai.Error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := slices.IndexFunc(r.items, func(x config.LoRAModule) bool { return x.Name == m.Name }); i >= 0 {
		r.items[i] = m
		return nil
	}
	if len(r.items) >= limits.MaxLoRAAdapters {
		return errTooManyLoRAs
	}
	r.items = append(r.items, m)
	r.next++
	r.ids[m.Name] = r.next
	return nil
}

func (r *loraRegistry) remove(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.items)
	r.items = slices.DeleteFunc(r.items, func(x config.LoRAModule) bool { return x.Name == name })
	delete(r.ids, name)
	return len(r.items) != n
}

// lookup returns the registry's own copy of a known adapter's name. A
// request's model name may view a pooled body buffer (the fast decoder
// does not copy), so anything kept beyond the request (scheduler slots,
// metric labels) must use this copy.
func (r *loraRegistry) lookup(name string) (string, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if i := slices.IndexFunc(r.items, func(x config.LoRAModule) bool { return x.Name == name }); i >= 0 {
		return r.items[i].Name, true
	}
	return "", false
}

func (r *loraRegistry) known(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.ContainsFunc(r.items, func(x config.LoRAModule) bool { return x.Name == name })
}

func (r *loraRegistry) id(name string) int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.ids[name]
}

func (r *loraRegistry) list() []config.LoRAModule {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.items)
}

func (r *rank) handleLoadLoRA(ctx *fasthttp.RequestCtx) {
	var req struct {
		Name string `json:"lora_name"`
		Path string `json:"lora_path"`
	}
	if err := json.Unmarshal(ctx.PostBody(), &req); err != nil {
		openai.WriteError(ctx, openai.NewError(400, "Failed to read and parse request body, "+err.Error()))
		return
	}
	if err := limits.CheckLoRA(req.Name, req.Path); err != nil {
		openai.WriteError(ctx, openai.NewParamError(400, err.Error(), "lora_name"))
		return
	}
	if e := r.loras.add(config.LoRAModule{Name: req.Name, Path: req.Path, BaseModelName: r.cfg.Model}); e != nil {
		openai.WriteError(ctx, e)
	}
}

func (r *rank) handleUnloadLoRA(ctx *fasthttp.RequestCtx) {
	var req struct {
		Name string `json:"lora_name"`
	}
	if err := json.Unmarshal(ctx.PostBody(), &req); err != nil {
		openai.WriteError(ctx, openai.NewError(400, "Failed to read and parse request body, "+err.Error()))
		return
	}
	// Like vLLM's simulator, unloading an unknown adapter is not an error.
	if r.loras.remove(req.Name) {
		// Its series go too, so loading and unloading new names cannot grow
		// the registry without bound.
		r.metrics.DropModel(req.Name)
	}
}
