package state

import "errors"

// Sentinel errors. Implementations wrap them with detail (fmt.Errorf("%w: ...")), so callers
// test with errors.Is; the HTTP layer maps them to status codes as noted on each.
var (
	// ErrNotFound: the record (or lease, claim) does not exist. HTTP 404.
	ErrNotFound = errors.New("state: not found")
	// ErrExists: Create found a record with the same kind and id. HTTP 409.
	ErrExists = errors.New("state: already exists")
	// ErrVersionConflict: the record changed since the caller read it. HTTP 409; re-read and retry.
	ErrVersionConflict = errors.New("state: version conflict")
	// ErrInvalidTransition: the record's current status does not allow the requested transition. HTTP 409.
	ErrInvalidTransition = errors.New("state: invalid status transition")
	// ErrLeaseHeld: another owner holds the lease. HTTP 409 (or retry later).
	ErrLeaseHeld = errors.New("state: lease held by another owner")
	// ErrLeaseLost: the caller no longer holds the lease (expired, or taken over). Stop the work.
	ErrLeaseLost = errors.New("state: lease lost")
	// ErrStaleFence: a write carried a fencing token older than the newest issued one. HTTP 409.
	ErrStaleFence = errors.New("state: stale fencing token")
	// ErrUnavailable: the store cannot be reached (connection refused or reset, timeout, the
	// server still loading its data). HTTP 503 with Retry-After; events are redelivered.
	ErrUnavailable = errors.New("state: store unavailable")
	// ErrInvalid: the caller passed bad input (empty kind, malformed id, negative limit...). HTTP 400.
	ErrInvalid = errors.New("state: invalid input")
)
