package recordrepo_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lensfn/lensfn/runtime/recordrepo"
	"github.com/lensfn/lensfn/runtime/secret"
	"github.com/lensfn/lensfn/runtime/state"
	"github.com/lensfn/lensfn/runtime/state/redisstore/redistest"
)

type note struct {
	ID, Status, Text, Key string
}

var errNoSealer = errors.New("no sealer")

func repo(t *testing.T, sealer *secret.Sealer) *recordrepo.Repo[*note] {
	t.Helper()
	s := redistest.Open(t)
	return &recordrepo.Repo[*note]{Store: s, Sealer: sealer, Kind: "note", NoSealer: errNoSealer,
		Encode: func(n *note, version int64) (state.Record, error) {
			doc, err := json.Marshal(n)
			return state.Record{Kind: "note", ID: n.ID, Status: n.Status, Version: version, Doc: doc}, err
		},
		Decode: func(rec state.Record) (*note, error) {
			var n note
			err := json.Unmarshal(rec.Doc, &n)
			n.Status = rec.Status
			return &n, err
		},
		SetStatus: func(n *note, s string) { n.Status = s }}
}

func TestCreateTransitionLogAndDelete(t *testing.T) {
	ctx := context.Background()
	key := secret.NewKey()
	sealer, err := secret.FromEnv(key)
	if err != nil {
		t.Fatal(err)
	}
	r := repo(t, sealer)
	sealed, err := r.SealKey("n1", "sk-secret")
	if err != nil || sealed == "" || sealed == "sk-secret" {
		t.Fatalf("sealed %q, %v", sealed, err)
	}
	if err := r.Create(ctx, &note{ID: "n1", Status: "queued", Key: sealed}); err != nil {
		t.Fatal(err)
	}
	if err := r.Create(ctx, &note{ID: "n1", Status: "queued"}); !errors.Is(err, state.ErrExists) {
		t.Fatalf("second create: %v", err)
	}
	n, err := r.Load(ctx, "n1")
	if err != nil || n.Status != "queued" {
		t.Fatalf("load %+v %v", n, err)
	}
	if open, err := r.OpenKey("n1", n.Key); err != nil || open != "sk-secret" {
		t.Fatalf("open %q %v", open, err)
	}
	if _, err := r.OpenKey("n2", n.Key); err == nil {
		t.Fatal("a key sealed for one record opened for another")
	}
	// Exactly one of racing transitions from queued wins.
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := r.Transition(ctx, "n1", []string{"queued"}, "running", state.Fence{}, func(n *note) error { n.Text = "ran"; return nil }); err == nil {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d transitions won", wins.Load())
	}
	if n, _ = r.Load(ctx, "n1"); n.Status != "running" || n.Text != "ran" {
		t.Fatalf("after the transition %+v", n)
	}
	line := r.Log(ctx, "n1", "hello %d", 7)
	lines, truncated, err := r.Logs(ctx, "n1")
	if err != nil || truncated || len(lines) != 1 || lines[0] != line {
		t.Fatalf("logs %v %v %v (wrote %q)", lines, truncated, err, line)
	}
	dir := filepath.Join(t.TempDir(), "n1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(ctx, "n1", 0, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Load(ctx, "n1"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("load after delete: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the folder survived: %v", err)
	}
}

func TestWithoutASealerKeysAreRefused(t *testing.T) {
	r := repo(t, nil)
	if _, err := r.SealKey("n1", "sk"); !errors.Is(err, errNoSealer) {
		t.Fatalf("seal: %v", err)
	}
	if _, err := r.OpenKey("n1", "sealed"); !errors.Is(err, errNoSealer) {
		t.Fatalf("open: %v", err)
	}
	if k, err := r.OpenKey("n1", ""); k != "" || err != nil {
		t.Fatalf("no key: %q %v", k, err)
	}
}
