package engine

import (
	"slices"
	"strconv"
	"sync"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/limits"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/openai"
)

// LoRARegistry holds the adapters a rank knows: --lora-modules plus those
// loaded through /v1/load_lora_adapter, at most maxLoRAAdapters.
type LoRARegistry struct {
	mu    sync.RWMutex
	items []config.LoRAModule
	ids   map[string]int // loaded adapter -> 1-based id (KV events); a reload gets a new one, as in vLLM
	next  int
}

var ErrTooManyLoRAs = openai.NewParamError(400, "Cannot load more than "+strconv.Itoa(limits.MaxLoRAAdapters)+
	" LoRA adapters; unload one first.", "lora_name")

// NewLoRARegistry starts with the --lora-modules adapters.
func NewLoRARegistry(initial []config.LoRAModule) *LoRARegistry {
	r := &LoRARegistry{ids: map[string]int{}}
	for _, m := range initial {
		r.Add(m)
	}
	return r
}

// Add registers (or replaces) an adapter; a new one beyond limits.MaxLoRAAdapters is
// refused (ErrTooManyLoRAs).
func (r *LoRARegistry) Add(m config.LoRAModule) *openai.Error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := slices.IndexFunc(r.items, func(x config.LoRAModule) bool { return x.Name == m.Name }); i >= 0 {
		r.items[i] = m
		return nil
	}
	if len(r.items) >= limits.MaxLoRAAdapters {
		return ErrTooManyLoRAs
	}
	r.items = append(r.items, m)
	r.next++
	r.ids[m.Name] = r.next
	return nil
}

// Remove forgets an adapter and reports whether it was known.
func (r *LoRARegistry) Remove(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.items)
	r.items = slices.DeleteFunc(r.items, func(x config.LoRAModule) bool { return x.Name == name })
	delete(r.ids, name)
	return len(r.items) != n
}

// Lookup returns the registry's own copy of a known adapter's name. A
// request's model name may view a pooled body buffer (the fast decoder
// does not copy), so anything kept beyond the request (scheduler slots,
// metric labels) must use this copy.
func (r *LoRARegistry) Lookup(name string) (string, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if i := slices.IndexFunc(r.items, func(x config.LoRAModule) bool { return x.Name == name }); i >= 0 {
		return r.items[i].Name, true
	}
	return "", false
}

// Known reports whether an adapter is registered.
func (r *LoRARegistry) Known(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.ContainsFunc(r.items, func(x config.LoRAModule) bool { return x.Name == name })
}

// ID is a loaded adapter's 1-based id (KV events), 0 for an unknown one.
func (r *LoRARegistry) ID(name string) int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.ids[name]
}

// List is a copy of the registered adapters in registration order.
func (r *LoRARegistry) List() []config.LoRAModule {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.items)
}
