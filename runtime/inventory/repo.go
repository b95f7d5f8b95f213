package inventory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/lensfn/lensfn/runtime/egress"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/secret"
	"github.com/lensfn/lensfn/runtime/state"
)

// ErrNoSealer is returned when a secret must be stored but no sealing key is configured.
var ErrNoSealer = errors.New("inventory: LENS_SECRET_KEY is not configured, so secrets cannot be stored")

// Repo keeps the inventory records in the state store.
type Repo struct {
	Store  state.Store
	Sealer *secret.Sealer // nil: records carrying a secret are refused
	// HolderEnded, when set, says whether a use's holder (a run id) has ended for good.
	// DeleteExecution then drops the uses of ended holders instead of refusing the delete:
	// a process stopped between ending a run and releasing its use (a cancel of a queued run,
	// say) must not pin the execution forever. It must answer false for a holder it cannot
	// find (a run is created after it takes its use). Nil: every holder counts as active.
	HolderEnded func(ctx context.Context, holder string) (bool, error)
	// Endpoints is the operator's endpoint policy a kubeconfig's server must pass, as every
	// endpoint a user gives does (nil: egress's default deny only, so metadata addresses are
	// refused whoever builds the Repo).
	Endpoints *egress.Policy
}

// NewID returns a random UUID, the id format of every inventory record.
func NewID() string { return uuid.NewString() }

// maxUpdateAttempts bounds the re-read-and-retry loop of a read-modify-write.
const maxUpdateAttempts = 32

// noun names each kind in client-facing messages.
var noun = map[string]string{
	KindCluster: "cluster", KindSession: "cluster session", KindExecution: "deployment execution",
	KindModelService: "model service", KindConfiguration: "configuration",
}

func notFound(kind, id string) error {
	return problem.New(problem.CodeNotFound, "unknown %s %q", noun[kind], id)
}

// load reads a record's document into doc; an unknown or malformed id is a 404 problem.
func (r *Repo) load(ctx context.Context, kind, id string, doc any) (state.Record, error) {
	if state.ValidateID(id) != nil {
		return state.Record{}, notFound(kind, id)
	}
	rec, err := r.Store.Get(ctx, kind, id)
	if errors.Is(err, state.ErrNotFound) {
		return state.Record{}, notFound(kind, id)
	}
	if err != nil {
		return state.Record{}, err
	}
	if err := json.Unmarshal(rec.Doc, doc); err != nil {
		return state.Record{}, fmt.Errorf("inventory: %s %s has a corrupt document: %w", kind, id, err)
	}
	return rec, nil
}

// update is a read-modify-write of one record under its version: mutate edits the decoded
// document (and may return an error to abort, e.g. a 409 problem) and returns the record's new
// status, attrs and search text. Racing writers re-read and retry.
func update[D any](ctx context.Context, r *Repo, kind, id string, mutate func(doc *D, rec *state.Record) error) (D, error) {
	var lastErr error
	for range maxUpdateAttempts {
		var doc D
		rec, err := r.load(ctx, kind, id, &doc)
		if err != nil {
			return doc, err
		}
		if err := mutate(&doc, &rec); err != nil {
			return doc, err
		}
		if rec.Doc, err = json.Marshal(doc); err != nil {
			return doc, err
		}
		_, err = r.Store.Update(ctx, rec, state.UpdateOptions{})
		if err == nil {
			return doc, nil
		}
		if errors.Is(err, state.ErrNotFound) {
			return doc, notFound(kind, id)
		}
		if !errors.Is(err, state.ErrVersionConflict) {
			return doc, err
		}
		lastErr = err
		if err := ctx.Err(); err != nil {
			return doc, err
		}
	}
	return *new(D), fmt.Errorf("inventory: update %s %s gave up after %d attempts: %w", kind, id, maxUpdateAttempts, lastErr)
}

func (r *Repo) create(ctx context.Context, kind, id, status string, created time.Time, attrs map[string]string, search string, doc any) error {
	raw, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	_, err = r.Store.Create(ctx, state.Record{Kind: kind, ID: id, Status: status, CreatedAt: created,
		Attrs: attrs, Search: search, Doc: raw})
	if errors.Is(err, state.ErrExists) {
		return problem.Wrap(problem.CodeConflict, err, fmt.Sprintf("%s %q already exists", noun[kind], id))
	}
	return err
}

// Page selects a slice of a listing (newest first).
type Page struct {
	Offset, Limit int // Limit 0: state.DefaultLimit
}

// list returns one page of a kind's documents and the total matching.
func list[D any](ctx context.Context, r *Repo, q state.Query) ([]D, int, error) {
	page, err := r.Store.List(ctx, q)
	if err != nil {
		return nil, 0, err
	}
	out := make([]D, 0, len(page.Records))
	for _, rec := range page.Records {
		var doc D
		if err := json.Unmarshal(rec.Doc, &doc); err != nil {
			return nil, 0, fmt.Errorf("inventory: %s %s has a corrupt document: %w", rec.Kind, rec.ID, err)
		}
		out = append(out, doc)
	}
	return out, page.Total, nil
}

func (r *Repo) seal(plain, context string) (string, error) {
	if plain == "" {
		return "", nil
	}
	if r.Sealer == nil {
		return "", problem.Wrap(problem.CodeUnavailable, ErrNoSealer, "")
	}
	return r.Sealer.Seal(plain, context), nil
}

func (r *Repo) open(sealed, context string) (string, error) {
	if sealed == "" {
		return "", nil
	}
	if r.Sealer == nil {
		return "", ErrNoSealer
	}
	return r.Sealer.Open(sealed, context)
}

func sealContext(kind, id string) string { return kind + ":" + id }

func now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }
