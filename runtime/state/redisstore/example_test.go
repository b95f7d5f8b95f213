package redisstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/lensfn/lensfn/runtime/state"
	"github.com/lensfn/lensfn/runtime/state/redisstore"
)

// A simulation task's life in the store: create, claim with a lease, transition under its
// fence, list with filters, counts and facets.
func Example() {
	ctx := context.Background()
	server, err := redisstore.StartEmbedded() // the local stack does this when no redis-server is on PATH
	if err != nil {
		panic(err)
	}
	defer server.Close()
	store, err := redisstore.Open(ctx, server.URL(), redisstore.Options{})
	if err != nil {
		panic(err)
	}
	defer store.Close()

	created := time.Date(2026, 9, 23, 9, 18, 24, 287_000_000, time.UTC)
	for i, model := range []string{"Qwen/Qwen3-8B", "meta/llama-3", "Qwen/Qwen3-8B"} {
		_, err := store.Create(ctx, state.Record{
			Kind: "task", ID: fmt.Sprintf("1a2b3c4%d", i), Status: "queued", CreatedAt: created.Add(time.Duration(i) * time.Minute),
			Attrs:  map[string]string{"backend": "trace-replayer", "model": model},
			Search: fmt.Sprintf("Trace simulation %d", i),
			Doc:    []byte(`{"progress_percent":0}`),
		})
		if err != nil {
			panic(err)
		}
	}

	lease, err := store.AcquireLease(ctx, "task:1a2b3c40", "trace-replayer-pod-1", 30*time.Second)
	if err != nil {
		panic(err)
	}
	running, err := state.Transition(ctx, store, "task", "1a2b3c40", state.TransitionSpec{
		From: []string{"queued"}, To: "running", Fence: lease.Fence(),
		Mutate: func(r *state.Record) error { r.Doc = []byte(`{"progress_percent":1}`); return nil },
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(running.ID, running.Status, "version", running.Version)

	page, err := store.List(ctx, state.Query{Kind: "task", Status: []string{"queued"},
		Attrs: map[string]string{"model": "Qwen/Qwen3-8B"}, Limit: 10})
	if err != nil {
		panic(err)
	}
	for _, r := range page.Records {
		fmt.Println("queued Qwen task:", r.ID)
	}
	counts, _ := store.Counts(ctx, "task")
	fmt.Println("counts:", counts)
	facets, _ := store.Facets(ctx, "task", "model")
	fmt.Println("models:", facets["model"])
	// Output:
	// 1a2b3c40 running version 2
	// queued Qwen task: 1a2b3c42
	// counts: map[queued:2 running:1]
	// models: [Qwen/Qwen3-8B meta/llama-3]
}
