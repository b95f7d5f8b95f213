package engine

import (
	"errors"
	"strconv"
	"testing"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/limits"
)

// TestLoRARegistryBound: adapters load up to limits.MaxLoRAAdapters, the next is refused
// with the OpenAI-style 400, reloading a known one is no new entry, and unloading frees a
// place; a reload after an unload gets a new id, as in vLLM.
func TestLoRARegistryBound(t *testing.T) {
	r := NewLoRARegistry([]config.LoRAModule{{Name: "initial"}})
	for i := 1; i < limits.MaxLoRAAdapters; i++ {
		if e := r.Add(config.LoRAModule{Name: "a" + strconv.Itoa(i)}); e != nil {
			t.Fatalf("adapter %d refused below the bound: %v", i, e)
		}
	}
	e := r.Add(config.LoRAModule{Name: "one-too-many"})
	if !errors.Is(e, ErrTooManyLoRAs) || e.Status != 400 {
		t.Fatalf("adapter beyond %d: %v", limits.MaxLoRAAdapters, e)
	}
	if r.Known("one-too-many") || len(r.List()) != limits.MaxLoRAAdapters {
		t.Fatalf("a refused adapter must not be registered (%d known)", len(r.List()))
	}
	if e := r.Add(config.LoRAModule{Name: "a1", Path: "/new"}); e != nil {
		t.Fatalf("reloading a known adapter at the bound: %v", e)
	}
	if l := r.List(); l[1].Path != "/new" {
		t.Fatalf("reload must replace the entry in place: %+v", l[1])
	}
	id := r.ID("a1")
	if !r.Remove("a1") || r.Remove("a1") || r.Known("a1") || r.ID("a1") != 0 {
		t.Fatal("Remove must forget the adapter once and report whether it was known")
	}
	if e := r.Add(config.LoRAModule{Name: "a1"}); e != nil {
		t.Fatalf("a place freed by Remove: %v", e)
	}
	if got := r.ID("a1"); got == 0 || got == id {
		t.Fatalf("reloaded adapter's id %d, want a new one (was %d)", got, id)
	}
	name, ok := r.Lookup("initial")
	if !ok || name != "initial" {
		t.Fatalf("Lookup(initial) = %q, %v", name, ok)
	}
	if _, ok := r.Lookup("absent"); ok {
		t.Fatal("Lookup found an unknown adapter")
	}
}
