package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lensfn/lensfn/runtime/state"
)

// CreateBatch creates records through the same script as Create, pipelined, so benchmarks
// can load 100,000 records in seconds.
func (s *Store) CreateBatch(ctx context.Context, records []state.Record) error {
	if err := createScript.Load(ctx, s.rdb).Err(); err != nil {
		return err
	}
	cmds := make([]*redis.Cmd, 0, len(records))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, r := range records {
			_, keys, args, err := s.createCall(r, time.Now())
			if err != nil {
				return err
			}
			cmds = append(cmds, createScript.EvalSha(ctx, p, keys, args...))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("create batch: %w", err)
	}
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			return err
		}
	}
	return nil
}

// SetAfterListPick runs f between List's two round trips (the window in which a listed record
// can change); nil removes it.
func SetAfterListPick(f func()) { afterListPick = f }
