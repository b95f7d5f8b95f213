package state

import (
	"encoding/json"
	"fmt"
	"time"
)

// Names (kinds, statuses, attribute names) become parts of storage keys, so they are limited
// to a small alphabet without the ':' separator. Ids, attribute values and lease/claim keys
// may hold any printable text except that ids and attribute values must not be empty.

const maxNameLen = 64

// ValidateName checks a kind, status or attribute name: 1-64 characters of a-z, 0-9, '_', '-', '.'.
func ValidateName(what, name string) error {
	if name == "" {
		return fmt.Errorf("%w: %s is empty", ErrInvalid, what)
	}
	if len(name) > maxNameLen {
		return fmt.Errorf("%w: %s %q is longer than %d characters", ErrInvalid, what, name, maxNameLen)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Errorf("%w: %s %q may only contain a-z, 0-9, '_', '-', '.'", ErrInvalid, what, name)
		}
	}
	return nil
}

const maxIDLen = 200

// ValidateID checks a record id: 1-200 characters of A-Z, a-z, 0-9, '_', '-', '.'.
func ValidateID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: id is empty", ErrInvalid)
	}
	if len(id) > maxIDLen {
		return fmt.Errorf("%w: id is longer than %d characters", ErrInvalid, maxIDLen)
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Errorf("%w: id %q may only contain A-Z, a-z, 0-9, '_', '-', '.'", ErrInvalid, id)
		}
	}
	return nil
}

// ValidateKey checks a free-form key (lease name, claim key, counter name): non-empty, at
// most 512 bytes, no control characters.
func ValidateKey(what, key string) error {
	if key == "" {
		return fmt.Errorf("%w: %s is empty", ErrInvalid, what)
	}
	if len(key) > 512 {
		return fmt.Errorf("%w: %s is longer than 512 bytes", ErrInvalid, what)
	}
	for _, c := range key {
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("%w: %s %q contains a control character", ErrInvalid, what, key)
		}
	}
	return nil
}

// MaxCreatedAt bounds CreatedAt so that created_ms*1000 + seq%1000, the index score, stays
// exact in a float64 (2^53 / 1000 ms is in the year 2255).
var MaxCreatedAt = time.Date(2250, 1, 1, 0, 0, 0, 0, time.UTC)

// ValidateRecord checks what a store needs from a record before writing it.
func ValidateRecord(r Record) error {
	if err := ValidateName("kind", r.Kind); err != nil {
		return err
	}
	if err := ValidateID(r.ID); err != nil {
		return err
	}
	if err := ValidateName("status", r.Status); err != nil {
		return err
	}
	for name, value := range r.Attrs {
		if err := ValidateName("attribute name", name); err != nil {
			return err
		}
		if len(value) > 1024 {
			return fmt.Errorf("%w: attribute %s is longer than 1024 bytes", ErrInvalid, name)
		}
	}
	if len(r.Doc) > 0 && !json.Valid(r.Doc) {
		return fmt.Errorf("%w: doc of %s %s is not valid JSON", ErrInvalid, r.Kind, r.ID)
	}
	if !r.CreatedAt.IsZero() && (r.CreatedAt.Before(time.UnixMilli(0)) || !r.CreatedAt.Before(MaxCreatedAt)) {
		return fmt.Errorf("%w: created_at %s is outside 1970-%d", ErrInvalid, r.CreatedAt, MaxCreatedAt.Year())
	}
	return nil
}

// Validate checks a query and returns it with the default limit applied.
func (q Query) Validate() (Query, error) {
	if err := ValidateName("kind", q.Kind); err != nil {
		return q, err
	}
	for _, s := range q.Status {
		if err := ValidateName("status", s); err != nil {
			return q, err
		}
	}
	for name := range q.Attrs {
		if err := ValidateName("attribute name", name); err != nil {
			return q, err
		}
	}
	if q.Offset < 0 {
		return q, fmt.Errorf("%w: offset %d is negative", ErrInvalid, q.Offset)
	}
	if q.Limit < 0 || q.Limit > MaxLimit {
		return q, fmt.Errorf("%w: limit %d is outside 0-%d", ErrInvalid, q.Limit, MaxLimit)
	}
	if q.Limit == 0 {
		q.Limit = DefaultLimit
	}
	if !q.CreatedAfter.IsZero() && !q.CreatedBefore.IsZero() && q.CreatedBefore.Before(q.CreatedAfter) {
		return q, fmt.Errorf("%w: created_before %s is earlier than created_after %s", ErrInvalid,
			q.CreatedBefore.Format(time.RFC3339Nano), q.CreatedAfter.Format(time.RFC3339Nano))
	}
	return q, nil
}
