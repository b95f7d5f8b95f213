package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/lensfn/lensfn/runtime/state"
)

// Create stores a new record at version 1 with all its index entries.
func (s *Store) Create(ctx context.Context, r state.Record) (out state.Record, err error) {
	defer s.observe("create", time.Now(), &err)
	r, keys, args, err := s.createCall(r, time.Now())
	if err != nil {
		return state.Record{}, err
	}
	if _, err := s.eval(ctx, createScript, keys, args...); err != nil {
		return state.Record{}, scriptError(err, r.Kind+" "+r.ID)
	}
	return r, nil
}

// createCall validates r and builds the create script's keys and arguments; r comes back as
// it will be stored.
func (s *Store) createCall(r state.Record, now time.Time) (state.Record, []string, []any, error) {
	if err := state.ValidateRecord(r); err != nil {
		return r, nil, nil, err
	}
	r = r.Clone()
	now = now.Truncate(time.Millisecond)
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now
	}
	r.CreatedAt = r.CreatedAt.Truncate(time.Millisecond).UTC()
	r.UpdatedAt = now.UTC()
	r.Version = 1
	r.Fence = 0
	r.Search = strings.ToLower(r.Search)
	r.Attrs = setAttrs(r.Attrs)

	names := sortedNames(r.Attrs)
	keys := []string{
		s.keys.record(r.Kind, r.ID), s.keys.all(r.Kind), s.keys.status(r.Kind, r.Status),
		s.keys.statuses(r.Kind), s.keys.search(r.Kind), s.keys.seq(), s.keys.gen(r.Kind),
	}
	args := []any{r.ID, strconv.FormatInt(ms(r.CreatedAt), 10), r.Status, r.Search, len(names)}
	for _, name := range names {
		keys = append(keys, s.keys.attr(r.Kind, name, r.Attrs[name]), s.keys.facet(r.Kind, name))
		args = append(args, r.Attrs[name])
	}
	args = append(args,
		fieldKind, r.Kind, fieldID, r.ID, fieldStatus, r.Status, fieldVersion, 1,
		fieldCreatedMS, ms(r.CreatedAt), fieldUpdatedMS, ms(r.UpdatedAt),
		fieldSearch, r.Search, fieldDoc, r.Doc, fieldFence, 0)
	for _, name := range names {
		args = append(args, attrField+name, r.Attrs[name])
	}
	return r, keys, args, nil
}

// Get returns one record.
func (s *Store) Get(ctx context.Context, kind, id string) (r state.Record, err error) {
	defer s.observe("get", time.Now(), &err)
	if err := validateRef(kind, id); err != nil {
		return state.Record{}, err
	}
	return s.get(ctx, kind, id)
}

// get reads a record without reporting to the observer (for use inside other operations).
func (s *Store) get(ctx context.Context, kind, id string) (state.Record, error) {
	reply, err := s.do(ctx, "HGETALL", s.keys.record(kind, id))
	if err != nil {
		return state.Record{}, fmt.Errorf("redisstore: get %s %s: %w", kind, id, err)
	}
	r, found, err := decodeRecord(reply)
	if err == nil && !found {
		err = fmt.Errorf("%w: %s %s", state.ErrNotFound, kind, id)
	}
	return r, err
}

// Update rewrites the record at r.Version and moves its index entries.
func (s *Store) Update(ctx context.Context, r state.Record, opts state.UpdateOptions) (out state.Record, err error) {
	defer s.observe("update", time.Now(), &err)
	if err := state.ValidateRecord(r); err != nil {
		return state.Record{}, err
	}
	if r.Version <= 0 {
		return state.Record{}, fmt.Errorf("%w: update of %s %s needs the version that was read", state.ErrInvalid, r.Kind, r.ID)
	}
	if opts.Fence != (state.Fence{}) {
		if err := state.ValidateKey("fence lease name", opts.Fence.Lease); err != nil {
			return state.Record{}, err
		}
		if opts.Fence.Token <= 0 {
			return state.Record{}, fmt.Errorf("%w: fence token %d is not positive", state.ErrInvalid, opts.Fence.Token)
		}
	}
	what := r.Kind + " " + r.ID
	// The script needs the old index keys in KEYS, so read the current memberships first;
	// the version check inside the script guarantees they are still the current ones.
	cur, err := s.get(ctx, r.Kind, r.ID)
	if err != nil {
		return state.Record{}, err
	}
	if cur.Version != r.Version {
		return state.Record{}, fmt.Errorf("%w: %s is at version %d, not %d", state.ErrVersionConflict, what, cur.Version, r.Version)
	}

	next := r.Clone()
	next.Attrs = setAttrs(next.Attrs)
	next.Search = strings.ToLower(next.Search)
	next.CreatedAt = cur.CreatedAt
	next.UpdatedAt = time.Now().Truncate(time.Millisecond).UTC()

	type change struct{ name, value string }
	var leave, join []change
	var delFields []any
	for _, name := range sortedNames(cur.Attrs) {
		if v := cur.Attrs[name]; next.Attrs[name] != v {
			leave = append(leave, change{name, v})
			if next.Attrs[name] == "" {
				delFields = append(delFields, attrField+name)
			}
		}
	}
	for _, name := range sortedNames(next.Attrs) {
		if v := next.Attrs[name]; cur.Attrs[name] != v {
			join = append(join, change{name, v})
		}
	}
	// Listing caches depend on memberships and search text; doc-only writes keep them valid.
	reindex := cur.Status != next.Status || len(leave) > 0 || len(join) > 0 || cur.Search != next.Search

	fenceKey := s.keys.record(r.Kind, r.ID) // unused placeholder when unfenced
	if opts.Fence.Token > 0 {
		fenceKey = s.keys.fence(opts.Fence.Lease)
	}
	keys := []string{
		s.keys.record(r.Kind, r.ID), s.keys.search(r.Kind), s.keys.gen(r.Kind), fenceKey,
		s.keys.status(r.Kind, cur.Status), s.keys.status(r.Kind, next.Status), s.keys.statuses(r.Kind),
	}
	reindexFlag := "0"
	if reindex {
		reindexFlag = "1"
	}
	args := []any{r.ID, strconv.FormatInt(r.Version, 10), opts.Fence.Token, reindexFlag, next.Search, next.Status,
		len(leave), len(join), len(delFields)}
	for _, c := range leave {
		keys = append(keys, s.keys.attr(r.Kind, c.name, c.value), s.keys.facet(r.Kind, c.name))
		args = append(args, c.value)
	}
	for _, c := range join {
		keys = append(keys, s.keys.attr(r.Kind, c.name, c.value), s.keys.facet(r.Kind, c.name))
		args = append(args, c.value)
	}
	args = append(args, delFields...)
	args = append(args, fieldStatus, next.Status, fieldUpdatedMS, ms(next.UpdatedAt),
		fieldSearch, next.Search, fieldDoc, next.Doc)
	for _, name := range sortedNames(next.Attrs) {
		args = append(args, attrField+name, next.Attrs[name])
	}
	version, err := redis.Int64(s.eval(ctx, updateScript, keys, args...))
	if err != nil {
		return state.Record{}, scriptError(err, what)
	}
	next.Version = version
	next.Fence = cur.Fence
	if opts.Fence.Token > 0 {
		next.Fence = opts.Fence.Token
	}
	return next, nil
}

// Delete removes the record, its index entries, progress stream and logs.
func (s *Store) Delete(ctx context.Context, kind, id string, opts state.DeleteOptions) (err error) {
	defer s.observe("delete", time.Now(), &err)
	if err := validateRef(kind, id); err != nil {
		return err
	}
	what := kind + " " + id
	const attempts = 16
	for range attempts {
		cur, err := s.get(ctx, kind, id)
		if err != nil {
			return err
		}
		if opts.Version != 0 && cur.Version != opts.Version {
			return fmt.Errorf("%w: %s is at version %d, not %d", state.ErrVersionConflict, what, cur.Version, opts.Version)
		}
		names := sortedNames(cur.Attrs)
		keys := []string{
			s.keys.record(kind, id), s.keys.all(kind), s.keys.status(kind, cur.Status), s.keys.search(kind),
			s.keys.gen(kind), s.keys.progress(kind, id), s.keys.logs(kind, id), s.keys.logsDropped(kind, id),
		}
		args := []any{id, strconv.FormatInt(cur.Version, 10), len(names)}
		for _, name := range names {
			keys = append(keys, s.keys.attr(kind, name, cur.Attrs[name]), s.keys.facet(kind, name))
			args = append(args, cur.Attrs[name])
		}
		_, err = s.eval(ctx, deleteScript, keys, args...)
		err = scriptError(err, what)
		if err == nil || opts.Version != 0 || !errors.Is(err, state.ErrVersionConflict) {
			return err
		}
		// An unconditional delete raced a writer: read the new memberships and try again.
	}
	return fmt.Errorf("%w: %s kept changing during %d delete attempts", state.ErrVersionConflict, what, attempts)
}

func validateRef(kind, id string) error {
	if err := state.ValidateName("kind", kind); err != nil {
		return err
	}
	return state.ValidateID(id)
}

// setAttrs drops empty values: an empty attribute means "not set" and is not indexed.
func setAttrs(attrs map[string]string) map[string]string {
	out := make(map[string]string, len(attrs))
	for k, v := range attrs {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

func sortedNames(attrs map[string]string) []string {
	names := make([]string, 0, len(attrs))
	for name := range attrs {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// decodeRecord reads a record from its HGETALL reply (field, value, ...) as redigo returns it,
// without an intermediate map: found is false when the record does not exist.
func decodeRecord(reply any) (r state.Record, found bool, err error) {
	flat, err := redis.Values(reply, nil)
	if err != nil {
		return state.Record{}, false, err
	}
	if len(flat) == 0 {
		return state.Record{}, false, nil
	}
	if len(flat)%2 != 0 {
		return state.Record{}, false, fmt.Errorf("redisstore: a record reply of %d elements", len(flat))
	}
	r.Attrs = map[string]string{}
	var version, created, updated, fence []byte
	for i := 0; i < len(flat); i += 2 {
		field, _ := flat[i].([]byte)
		value, _ := flat[i+1].([]byte)
		switch string(field) {
		case fieldKind:
			r.Kind = string(value)
		case fieldID:
			r.ID = string(value)
		case fieldStatus:
			r.Status = string(value)
		case fieldSearch:
			r.Search = string(value)
		case fieldDoc:
			if len(value) > 0 {
				r.Doc = value // redigo allocates every reply afresh
			}
		case fieldVersion:
			version = value
		case fieldCreatedMS:
			created = value
		case fieldUpdatedMS:
			updated = value
		case fieldFence:
			fence = value
		default:
			if name, ok := strings.CutPrefix(string(field), attrField); ok {
				r.Attrs[name] = string(value)
			}
		}
	}
	parse := func(field string, raw []byte) int64 {
		n, perr := strconv.ParseInt(string(raw), 10, 64)
		if perr != nil && err == nil {
			err = fmt.Errorf("redisstore: record %s %s has a corrupt %s field %q", r.Kind, r.ID, field, raw)
		}
		return n
	}
	r.Version = parse(fieldVersion, version)
	r.CreatedAt = time.UnixMilli(parse(fieldCreatedMS, created)).UTC()
	r.UpdatedAt = time.UnixMilli(parse(fieldUpdatedMS, updated)).UTC()
	r.Fence = parse(fieldFence, fence)
	return r, true, err
}
