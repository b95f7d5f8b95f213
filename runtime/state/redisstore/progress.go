package redisstore

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lensfn/lensfn/runtime/state"
)

// maxReadCount bounds one ReadProgress call.
const maxReadCount = 10000

// AppendProgress adds an entry to the record's progress stream.
func (s *Store) AppendProgress(ctx context.Context, kind, id string, fields map[string]string) (entryID string, err error) {
	defer s.observe("progress.append", time.Now(), &err)
	if err := validateRef(kind, id); err != nil {
		return "", err
	}
	if len(fields) == 0 {
		return "", fmt.Errorf("%w: progress entry for %s %s has no fields", state.ErrInvalid, kind, id)
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	sort.Strings(names)
	values := make([]any, 0, 2*len(names))
	for _, name := range names {
		values = append(values, name, fields[name])
	}
	entryID, err = s.rdb.XAdd(ctx, &redis.XAddArgs{
		Stream: s.keys.progress(kind, id),
		MaxLen: s.opts.StreamMaxLen,
		Approx: true,
		Values: values,
	}).Result()
	if err != nil {
		return "", fmt.Errorf("redisstore: append progress of %s %s: %w", kind, id, err)
	}
	return entryID, nil
}

// ReadProgress returns up to count entries after the cursor, waiting up to block for one.
func (s *Store) ReadProgress(ctx context.Context, kind, id, after string, count int, block time.Duration) (entries []state.ProgressEntry, err error) {
	defer s.observe("progress.read", time.Now(), &err)
	if err := validateRef(kind, id); err != nil {
		return nil, err
	}
	if count <= 0 || count > maxReadCount {
		return nil, fmt.Errorf("%w: progress read count %d is outside 1-%d", state.ErrInvalid, count, maxReadCount)
	}
	if after == "" {
		after = "0-0"
	}
	if !validStreamID(after) {
		return nil, fmt.Errorf("%w: progress cursor %q is not a stream id (<ms>-<seq>)", state.ErrInvalid, after)
	}
	args := &redis.XReadArgs{
		Streams: []string{s.keys.progress(kind, id), after},
		Count:   int64(count),
		Block:   -1, // go-redis sends no BLOCK for a negative value; 0 would block forever
	}
	if block > 0 {
		args.Block = max(block, time.Millisecond)
	}
	streams, err := s.rdb.XRead(ctx, args).Result()
	if isNil(err) {
		return []state.ProgressEntry{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("redisstore: read progress of %s %s after %s: %w", kind, id, after, err)
	}
	entries = []state.ProgressEntry{}
	for _, st := range streams {
		for _, m := range st.Messages {
			fields := make(map[string]string, len(m.Values))
			for k, v := range m.Values {
				fields[k] = fmt.Sprint(v)
			}
			entries = append(entries, state.ProgressEntry{ID: m.ID, Fields: fields})
		}
	}
	return entries, nil
}

// AppendLogs adds lines, keeping only the newest LogCap lines and counting the dropped ones.
func (s *Store) AppendLogs(ctx context.Context, kind, id string, lines ...string) (err error) {
	defer s.observe("logs.append", time.Now(), &err)
	if err := validateRef(kind, id); err != nil {
		return err
	}
	if len(lines) == 0 {
		return nil
	}
	// Lines beyond the cap would be trimmed right away: drop them here and count them, which
	// also keeps the script's argument list bounded.
	var dropped int
	if len(lines) > s.opts.LogCap {
		dropped = len(lines) - s.opts.LogCap
		lines = lines[dropped:]
	}
	args := make([]any, 0, len(lines)+2)
	args = append(args, s.opts.LogCap, dropped)
	for _, l := range lines {
		args = append(args, l)
	}
	keys := []string{s.keys.logs(kind, id), s.keys.logsDropped(kind, id)}
	if err := appendLogsScript.Run(ctx, s.rdb, keys, args...).Err(); err != nil {
		return fmt.Errorf("redisstore: append logs of %s %s: %w", kind, id, err)
	}
	return nil
}

// ReadLogs returns the retained lines, oldest first, and the number dropped.
func (s *Store) ReadLogs(ctx context.Context, kind, id string) (logs state.Logs, err error) {
	defer s.observe("logs.read", time.Now(), &err)
	if err := validateRef(kind, id); err != nil {
		return state.Logs{}, err
	}
	pipe := s.rdb.TxPipeline()
	lines := pipe.LRange(ctx, s.keys.logs(kind, id), 0, -1)
	dropped := pipe.Get(ctx, s.keys.logsDropped(kind, id))
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		return state.Logs{}, fmt.Errorf("redisstore: read logs of %s %s: %w", kind, id, err)
	}
	n, err := dropped.Int64()
	if err != nil && !isNil(err) {
		return state.Logs{}, fmt.Errorf("redisstore: read logs of %s %s: corrupt drop count: %w", kind, id, err)
	}
	out := lines.Val()
	if out == nil {
		out = []string{}
	}
	return state.Logs{Lines: out, Dropped: n}, nil
}

// validStreamID accepts "<ms>" or "<ms>-<seq>" with decimal parts.
func validStreamID(id string) bool {
	ms, seq, hasSeq := strings.Cut(id, "-")
	return isDigits(ms) && (!hasSeq || isDigits(seq))
}

func isDigits(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
