package state

import (
	"context"
	"time"
)

// Record is one stored entity (a simulation task, a benchmark run, a workflow...). The store
// indexes Kind, Status, CreatedAt and Attrs; Doc is opaque JSON owned by the caller.
type Record struct {
	Kind string // record family, e.g. "task", "run", "workflow"
	ID   string
	// Status is indexed for filters and counts; Transition moves it under a version check.
	Status string
	// Version starts at 1 on Create and grows by one on every Update. Update and Delete take
	// it as the expected version (optimistic concurrency).
	Version   int64
	CreatedAt time.Time // millisecond precision; zero on Create means "now"
	UpdatedAt time.Time // set by the store on every write
	// Attrs are the indexed filter attributes (backend, model, dataset, trace_format, endpoint,
	// scenario...). An empty value means "not set" and is not indexed.
	Attrs map[string]string
	// Search is the free text matched by Query.Search (substring, case-insensitive).
	Search string
	// Doc is the JSON document served by the API.
	Doc []byte
	// Fence is the newest fencing token that wrote this record (0 when no fenced write happened).
	Fence int64
}

// Clone returns a deep copy, so a caller can mutate Attrs and Doc without touching the original.
func (r Record) Clone() Record {
	c := r
	if r.Attrs != nil {
		c.Attrs = make(map[string]string, len(r.Attrs))
		for k, v := range r.Attrs {
			c.Attrs[k] = v
		}
	}
	if r.Doc != nil {
		c.Doc = append([]byte(nil), r.Doc...)
	}
	return c
}

// Fence names a lease and the token its holder got from AcquireLease. A write carrying a Fence
// is rejected with ErrStaleFence once a newer token was issued for that lease.
type Fence struct {
	Lease string
	Token int64
}

// UpdateOptions modify Update.
type UpdateOptions struct {
	Fence Fence // zero value: no fencing check
}

// DeleteOptions modify Delete.
type DeleteOptions struct {
	// Version, when non-zero, makes the delete conditional on the record still being at that
	// version (ErrVersionConflict otherwise). Zero deletes whatever version is current.
	Version int64
}

// DefaultLimit is the page size used when Query.Limit is zero; MaxLimit is the largest allowed.
const (
	DefaultLimit = 50
	MaxLimit     = 1000
)

// Query selects records of one kind. All filters combine with AND; Status values combine
// with OR. Results are ordered newest first (CreatedAt, ties broken by creation order).
type Query struct {
	Kind   string
	Status []string          // any of these statuses; empty = all
	Attrs  map[string]string // every attribute must equal the value; empty values are ignored
	Search string            // case-insensitive substring of Record.Search
	// CreatedAfter and CreatedBefore bound CreatedAt inclusively, at millisecond precision.
	// Zero values leave that side open.
	CreatedAfter, CreatedBefore time.Time
	Offset, Limit               int
}

// Page is one page of a listing. Total counts every record matching the query, not just
// the page.
type Page struct {
	Records []Record
	Total   int
}

// Records stores, indexes and lists records.
type Records interface {
	// Create stores a new record at version 1; ErrExists when the kind/id is taken.
	Create(ctx context.Context, r Record) (Record, error)
	// Get returns the record; ErrNotFound when it does not exist.
	Get(ctx context.Context, kind, id string) (Record, error)
	// Update replaces Status, Attrs, Search and Doc of the record, expecting r.Version to be
	// current (ErrVersionConflict otherwise), and moves its index memberships atomically.
	// CreatedAt never changes. With opts.Fence set, the write fails with ErrStaleFence once
	// a newer token was issued for that lease. It returns the stored record.
	Update(ctx context.Context, r Record, opts UpdateOptions) (Record, error)
	// Delete removes the record, every index entry, its progress stream and its logs
	// atomically; ErrNotFound when it does not exist, ErrVersionConflict when opts.Version
	// is set and no longer current.
	Delete(ctx context.Context, kind, id string, opts DeleteOptions) error
	// List returns one page of the records matching q, newest first.
	List(ctx context.Context, q Query) (Page, error)
	// Counts returns the number of records per status for a kind, ignoring any filter.
	// Statuses used before but without records now report 0; never-used ones are absent.
	Counts(ctx context.Context, kind string) (map[string]int, error)
	// Facets returns, per attribute, the sorted distinct values held by at least one record.
	Facets(ctx context.Context, kind string, attrs ...string) (map[string][]string, error)
}

// Lease is a time-limited ownership of a named resource (usually "<kind>:<id>").
type Lease struct {
	Name  string
	Owner string
	// Token is the fencing token: strictly increasing per lease name across acquisitions.
	Token     int64
	ExpiresAt time.Time
}

// Fence returns the fencing value to attach to writes made under this lease.
func (l Lease) Fence() Fence { return Fence{Lease: l.Name, Token: l.Token} }

// Leases hands out leases with fencing tokens.
type Leases interface {
	// AcquireLease takes the lease for owner for ttl and issues a new fencing token;
	// ErrLeaseHeld when another owner holds it. Acquiring a lease the owner already holds
	// extends it and keeps its token (safe to repeat after a redelivered event).
	AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (Lease, error)
	// RenewLease extends the lease if l is still the holder; ErrLeaseLost otherwise.
	RenewLease(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	// ReleaseLease gives the lease up if l is still the holder; ErrLeaseLost otherwise.
	ReleaseLease(ctx context.Context, l Lease) error
	// LeaseHolder returns the current holder; ErrNotFound when nobody holds it.
	LeaseHolder(ctx context.Context, name string) (Lease, error)
}

// ClaimState says what Claim found.
type ClaimState int

const (
	// ClaimNew: the caller now owns the key and must do the work, then CompleteClaim or AbandonClaim.
	ClaimNew ClaimState = iota + 1
	// ClaimPending: another attempt is working on it; ask the sender to retry later.
	ClaimPending
	// ClaimDone: the work was done; Claim.Result holds what CompleteClaim stored.
	ClaimDone
)

func (s ClaimState) String() string {
	switch s {
	case ClaimNew:
		return "new"
	case ClaimPending:
		return "pending"
	case ClaimDone:
		return "done"
	}
	return "unknown"
}

// Claim is the outcome of claiming an idempotency key.
type Claim struct {
	State  ClaimState
	Result string // set when State is ClaimDone
	// Holder is the instance working on a pending claim (set when State is ClaimPending).
	Holder string
}

// ClaimOwner names the process that works on a claim: Instance is stable across restarts of one
// pod (POD_NAME), Incarnation is new each time the process starts. A pending claim left by an
// earlier incarnation of the caller's own instance was abandoned by a crash (one instance runs
// one process at a time), so Claim takes it over instead of reporting it pending.
type ClaimOwner struct {
	Instance, Incarnation string
}

// Claims deduplicates at-least-once deliveries (e.g. CloudEvents by source and id). A pending
// claim belongs to its owner: it lives for pendingTTL unless the owner renews it while it works,
// so a claim whose process died frees itself within one short TTL.
type Claims interface {
	// Claim marks key pending for owner for pendingTTL if it is unknown or was left pending by
	// an earlier incarnation of owner's instance (ClaimNew), or reports the pending or done state
	// another attempt left.
	Claim(ctx context.Context, key string, owner ClaimOwner, pendingTTL time.Duration) (Claim, error)
	// RenewClaim extends owner's pending claim by pendingTTL; ErrNotFound when owner no longer
	// holds it pending (it expired and another attempt took it, or it was completed).
	RenewClaim(ctx context.Context, key string, owner ClaimOwner, pendingTTL time.Duration) error
	// CompleteClaim records the result and keeps it for doneTTL.
	CompleteClaim(ctx context.Context, key, result string, doneTTL time.Duration) error
	// AbandonClaim drops owner's pending claim so a retry can do the work; a done claim, or one
	// another owner holds, is kept.
	AbandonClaim(ctx context.Context, key string, owner ClaimOwner) error
}

// ProgressEntry is one entry of a record's progress stream.
type ProgressEntry struct {
	ID     string // stream id, usable as the "after" cursor and as an SSE Last-Event-ID
	Fields map[string]string
}

// Logs is the retained tail of a record's log.
type Logs struct {
	Lines   []string
	Dropped int64 // lines dropped because the log exceeded its cap
}

// Truncated reports whether older lines were dropped.
func (l Logs) Truncated() bool { return l.Dropped > 0 }

// Progress keeps an append-only progress stream and a capped log per record.
type Progress interface {
	// AppendProgress adds an entry to the record's stream (approximately capped) and returns its id.
	AppendProgress(ctx context.Context, kind, id string, fields map[string]string) (string, error)
	// ReadProgress returns up to count entries after the cursor ("" = from the start). With
	// block > 0 it waits up to block for a new entry when none is available.
	ReadProgress(ctx context.Context, kind, id, after string, count int, block time.Duration) ([]ProgressEntry, error)
	// AppendLogs adds lines to the record's log, keeping only the newest lines up to the cap.
	AppendLogs(ctx context.Context, kind, id string, lines ...string) error
	// ReadLogs returns the retained lines, oldest first, and how many were dropped.
	ReadLogs(ctx context.Context, kind, id string) (Logs, error)
}

// Store is everything a Lensfn function needs from shared state.
type Store interface {
	Records
	Leases
	Claims
	Progress
	// Incr increments a named counter and returns the new value (first call returns 1).
	Incr(ctx context.Context, name string) (int64, error)
	// Ping checks the store is reachable (readiness probes).
	Ping(ctx context.Context) error
	Close() error
}

// Observer receives every store operation's name, duration and error, so the function
// runtime can export metrics without the store importing a metrics library.
type Observer func(op string, dur time.Duration, err error)
