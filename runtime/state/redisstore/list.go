package redisstore

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/lensfn/lensfn/runtime/state"
)

// List returns one page of q, newest first. One script picks or builds the candidate set
// (a single index directly; several through a cached ZUNIONSTORE/ZINTERSTORE), applies the
// created range as score bounds and the search needle server-side (matches cached for the
// next pages), and returns the total and the page's ids; one pipeline then fetches the rows.
func (s *Store) List(ctx context.Context, q state.Query) (page state.Page, err error) {
	defer s.observe("list", time.Now(), &err)
	q, err = q.Validate()
	if err != nil {
		return state.Page{}, err
	}
	statuses := append([]string(nil), q.Status...)
	sort.Strings(statuses)
	statuses = compactSorted(statuses)
	attrs := setAttrs(q.Attrs)
	names := sortedNames(attrs)

	var sources []string
	digest := sha1.New()
	for _, st := range statuses {
		sources = append(sources, s.keys.status(q.Kind, st))
		fmt.Fprintf(digest, "s\x00%s\x00", st)
	}
	for _, name := range names {
		sources = append(sources, s.keys.attr(q.Kind, name, attrs[name]))
		fmt.Fprintf(digest, "a\x00%s\x00%s\x00", name, attrs[name])
	}
	sum := hex.EncodeToString(digest.Sum(nil))

	mode, target := "direct", s.keys.all(q.Kind)
	switch {
	case len(sources) == 1:
		target = sources[0]
	case len(sources) > 1:
		mode, target = "combine", s.keys.list(q.Kind, sum)
	}
	minScore, maxScore := "-inf", "+inf"
	if !q.CreatedAfter.IsZero() {
		minScore = strconv.FormatInt(max(ms(q.CreatedAfter), 0)*1000, 10)
	}
	if !q.CreatedBefore.IsZero() {
		if ms(q.CreatedBefore) < 0 {
			return state.Page{Records: []state.Record{}}, nil
		}
		maxScore = strconv.FormatInt(ms(q.CreatedBefore)*1000+999, 10)
	}
	needle := strings.ToLower(q.Search)
	fmt.Fprintf(digest, "q\x00%s\x00%s\x00%s\x00", needle, minScore, maxScore)
	searchSum := hex.EncodeToString(digest.Sum(nil))
	keys := append([]string{
		s.keys.gen(q.Kind), target, s.keys.listGen(q.Kind, sum),
		s.keys.search(q.Kind), s.keys.list(q.Kind, searchSum), s.keys.listGen(q.Kind, searchSum),
	}, sources...)
	args := []any{mode, len(statuses), len(names), s.opts.ListCacheTTL.Milliseconds(), minScore, maxScore,
		q.Offset, q.Limit, needle}
	reply, err := redis.Values(s.eval(ctx, listScript, keys, args...))
	if err != nil {
		return state.Page{}, fmt.Errorf("redisstore: list %s: %w", q.Kind, err)
	}
	total, ids, err := parseListReply(reply)
	if err != nil {
		return state.Page{}, fmt.Errorf("redisstore: list %s: %w", q.Kind, err)
	}
	if afterListPick != nil {
		afterListPick()
	}
	records, err := s.fetch(ctx, q.Kind, ids)
	if err != nil {
		return state.Page{}, err
	}
	// A record deleted between the two round trips is left out of the page and the total, and
	// so is one whose status or attributes changed in between: it no longer matches the query
	// (a sweep over "every running run" must not be handed one that has just ended).
	matching := records[:0]
	for _, r := range records {
		if stillMatches(r, statuses, attrs) {
			matching = append(matching, r)
		}
	}
	total -= len(ids) - len(matching)
	return state.Page{Records: matching, Total: total}, nil
}

// afterListPick, set by tests only, runs between List's two round trips.
var afterListPick func()

// stillMatches reports whether a fetched record still has one of the listed statuses (sorted;
// none: any) and every listed attribute.
func stillMatches(r state.Record, statuses []string, attrs map[string]string) bool {
	if len(statuses) > 0 {
		if _, found := slices.BinarySearch(statuses, r.Status); !found {
			return false
		}
	}
	for name, v := range attrs {
		if r.Attrs[name] != v {
			return false
		}
	}
	return true
}

func parseListReply(reply []any) (int, []string, error) {
	if len(reply) != 2 {
		return 0, nil, fmt.Errorf("unexpected list reply of %d elements", len(reply))
	}
	total, ok := reply[0].(int64)
	if !ok {
		return 0, nil, fmt.Errorf("unexpected list total %T", reply[0])
	}
	raw, _ := reply[1].([]any)
	ids := make([]string, 0, len(raw))
	for _, v := range raw {
		id, ok := v.([]byte)
		if !ok {
			return 0, nil, fmt.Errorf("unexpected list id %T", v)
		}
		ids = append(ids, string(id))
	}
	return int(total), ids, nil
}

// fetch reads records in one pipeline, keeping the order of ids and skipping missing ones.
func (s *Store) fetch(ctx context.Context, kind string, ids []string) ([]state.Record, error) {
	if len(ids) == 0 {
		return []state.Record{}, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = s.keys.record(kind, id)
	}
	replies, err := s.eachKey(ctx, "HGETALL", keys)
	if err != nil {
		return nil, fmt.Errorf("redisstore: fetch %d %s records: %w", len(ids), kind, err)
	}
	out := make([]state.Record, 0, len(ids))
	for _, reply := range replies {
		r, found, err := decodeRecord(reply)
		if err != nil {
			return nil, fmt.Errorf("redisstore: fetch %d %s records: %w", len(ids), kind, err)
		}
		if found {
			out = append(out, r)
		}
	}
	return out, nil
}

// Counts returns the number of records per status (ZCARD of each status index), unfiltered.
func (s *Store) Counts(ctx context.Context, kind string) (counts map[string]int, err error) {
	defer s.observe("counts", time.Now(), &err)
	if err := state.ValidateName("kind", kind); err != nil {
		return nil, err
	}
	statuses, err := redis.Strings(s.do(ctx, "SMEMBERS", s.keys.statuses(kind)))
	if err != nil {
		return nil, fmt.Errorf("redisstore: counts %s: %w", kind, err)
	}
	counts = make(map[string]int, len(statuses))
	if len(statuses) == 0 {
		return counts, nil
	}
	keys := make([]string, len(statuses))
	for i, st := range statuses {
		keys[i] = s.keys.status(kind, st)
	}
	replies, err := s.eachKey(ctx, "ZCARD", keys)
	if err != nil {
		return nil, fmt.Errorf("redisstore: counts %s: %w", kind, err)
	}
	for i, st := range statuses {
		n, err := redis.Int(replies[i], nil)
		if err != nil {
			return nil, fmt.Errorf("redisstore: counts %s: %w", kind, err)
		}
		counts[st] = n
	}
	return counts, nil
}

// Facets returns the sorted distinct values of each attribute that at least one record holds.
func (s *Store) Facets(ctx context.Context, kind string, attrs ...string) (facets map[string][]string, err error) {
	defer s.observe("facets", time.Now(), &err)
	if err := state.ValidateName("kind", kind); err != nil {
		return nil, err
	}
	for _, a := range attrs {
		if err := state.ValidateName("attribute name", a); err != nil {
			return nil, err
		}
	}
	facets = make(map[string][]string, len(attrs))
	if len(attrs) == 0 {
		return facets, nil
	}
	keys := make([]string, len(attrs))
	for i, a := range attrs {
		keys[i] = s.keys.facet(kind, a)
	}
	replies, err := s.eachKey(ctx, "SMEMBERS", keys)
	if err != nil {
		return nil, fmt.Errorf("redisstore: facets %s: %w", kind, err)
	}
	for i, a := range attrs {
		values, err := redis.Strings(replies[i], nil)
		if err != nil {
			return nil, fmt.Errorf("redisstore: facets %s: %w", kind, err)
		}
		sort.Strings(values)
		if values == nil {
			values = []string{}
		}
		facets[a] = values
	}
	return facets, nil
}

// eachKey runs a one-key read command for every key in one pipeline.
func (s *Store) eachKey(ctx context.Context, cmd string, keys []string) ([]any, error) {
	cmds := make([]command, len(keys))
	for i, k := range keys {
		cmds[i] = command{cmd, []any{k}}
	}
	return s.pipeline(ctx, cmds)
}

func compactSorted(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
