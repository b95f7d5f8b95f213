package redisstore

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"

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
	args := make([]any, 0, 5+2*len(names))
	args = append(args, s.keys.progress(kind, id), "MAXLEN", "~", s.opts.StreamMaxLen, "*")
	for _, name := range names {
		args = append(args, name, fields[name])
	}
	entryID, err = redis.String(s.do(ctx, "XADD", args...))
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
	args := []any{"COUNT", count}
	if block > 0 {
		args = append(args, "BLOCK", max(block, time.Millisecond).Milliseconds())
	}
	args = append(args, "STREAMS", s.keys.progress(kind, id), after)
	reply, err := s.readStream(ctx, block, args)
	if err != nil {
		return nil, fmt.Errorf("redisstore: read progress of %s %s after %s: %w", kind, id, after, err)
	}
	entries, err = parseStreams(reply)
	if err != nil {
		return nil, fmt.Errorf("redisstore: read progress of %s %s after %s: %w", kind, id, after, err)
	}
	return entries, nil
}

// pollStep is how often a read that could not block polls instead.
const pollStep = 250 * time.Millisecond

// readStream runs XREAD on its own pooled connection. A blocking read waits for its reply up to
// its BLOCK plus blockSlack (the default read timeout would cut it short), or until ctx's
// deadline. Only cap(blockers) reads block at once; the others poll without BLOCK every
// pollStep until block has passed, holding a connection only for each quick read, so however
// many event streams are open the rest of the pool stays free for every other operation.
func (s *Store) readStream(ctx context.Context, block time.Duration, args []any) (any, error) {
	if block <= 0 {
		return s.do(ctx, "XREAD", args...)
	}
	select {
	case s.blockers <- struct{}{}:
		defer func() { <-s.blockers }()
	default:
		return s.pollStream(ctx, block, withoutBlock(args))
	}
	c, err := s.conn(ctx)
	if err != nil {
		return nil, err
	}
	defer s.release(c)
	timeout := block + blockSlack
	if dl, ok := ctx.Deadline(); ok {
		if until := time.Until(dl); until <= 0 {
			return nil, context.DeadlineExceeded
		} else if until < timeout {
			timeout = until
		}
	}
	return redis.DoWithTimeout(c, timeout, "XREAD", args...)
}

// pollStream reads without blocking every pollStep until a reply comes or block has passed.
func (s *Store) pollStream(ctx context.Context, block time.Duration, args []any) (any, error) {
	deadline := time.Now().Add(block)
	for {
		reply, err := s.do(ctx, "XREAD", args...)
		if err != nil || reply != nil {
			return reply, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(left, pollStep)):
		}
	}
}

// withoutBlock is XREAD's arguments without BLOCK and its value.
func withoutBlock(args []any) []any {
	out := make([]any, 0, len(args))
	for i := 0; i < len(args); i++ {
		if args[i] == "BLOCK" {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// parseStreams reads an XREAD reply: nil when nothing came, else [[stream, [[id, [field,
// value, ...]], ...]], ...].
func parseStreams(reply any) ([]state.ProgressEntry, error) {
	entries := []state.ProgressEntry{}
	if reply == nil {
		return entries, nil
	}
	streams, err := redis.Values(reply, nil)
	if err != nil {
		return nil, err
	}
	for _, st := range streams {
		pair, err := redis.Values(st, nil)
		if err != nil || len(pair) != 2 {
			return nil, fmt.Errorf("unexpected stream reply %v", st)
		}
		messages, err := redis.Values(pair[1], nil)
		if err != nil {
			return nil, err
		}
		for _, m := range messages {
			idAndFields, err := redis.Values(m, nil)
			if err != nil || len(idAndFields) != 2 {
				return nil, fmt.Errorf("unexpected stream entry %v", m)
			}
			id, err := redis.String(idAndFields[0], nil)
			if err != nil {
				return nil, err
			}
			fields, err := redis.StringMap(idAndFields[1], nil)
			if err != nil {
				return nil, err
			}
			entries = append(entries, state.ProgressEntry{ID: id, Fields: fields})
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
	if _, err := s.eval(ctx, appendLogsScript, keys, args...); err != nil {
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
	replies, err := s.transaction(ctx, []command{
		{"LRANGE", []any{s.keys.logs(kind, id), 0, -1}},
		{"GET", []any{s.keys.logsDropped(kind, id)}},
	})
	if err != nil {
		return state.Logs{}, fmt.Errorf("redisstore: read logs of %s %s: %w", kind, id, err)
	}
	out, err := redis.Strings(replies[0], nil)
	if err != nil {
		return state.Logs{}, fmt.Errorf("redisstore: read logs of %s %s: %w", kind, id, err)
	}
	var n int64
	if replies[1] != nil {
		if n, err = redis.Int64(replies[1], nil); err != nil {
			return state.Logs{}, fmt.Errorf("redisstore: read logs of %s %s: corrupt drop count: %w", kind, id, err)
		}
	}
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
