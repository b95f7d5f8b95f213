package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/lensfn/lensfn/runtime/state"
)

// Claim marks key pending for pendingTTL when unknown, or reports what another attempt left.
func (s *Store) Claim(ctx context.Context, key string, pendingTTL time.Duration) (c state.Claim, err error) {
	defer s.observe("claim", time.Now(), &err)
	if err := state.ValidateKey("claim key", key); err != nil {
		return state.Claim{}, err
	}
	if err := validateTTL("pending ttl", pendingTTL); err != nil {
		return state.Claim{}, err
	}
	reply, err := claimScript.Run(ctx, s.rdb, []string{s.keys.claim(key)}, pendingTTL.Milliseconds()).StringSlice()
	if err != nil {
		return state.Claim{}, fmt.Errorf("redisstore: claim %s: %w", key, err)
	}
	if len(reply) != 2 {
		return state.Claim{}, fmt.Errorf("redisstore: claim %s: unexpected reply %v", key, reply)
	}
	switch reply[0] {
	case "new":
		return state.Claim{State: state.ClaimNew}, nil
	case "pending":
		return state.Claim{State: state.ClaimPending}, nil
	case "done":
		return state.Claim{State: state.ClaimDone, Result: reply[1]}, nil
	}
	return state.Claim{}, fmt.Errorf("redisstore: claim %s: unexpected state %q", key, reply[0])
}

// CompleteClaim stores the result of the claimed work for doneTTL.
func (s *Store) CompleteClaim(ctx context.Context, key, result string, doneTTL time.Duration) (err error) {
	defer s.observe("claim.complete", time.Now(), &err)
	if err := state.ValidateKey("claim key", key); err != nil {
		return err
	}
	if err := validateTTL("done ttl", doneTTL); err != nil {
		return err
	}
	if err := s.rdb.Set(ctx, s.keys.claim(key), "d:"+result, doneTTL).Err(); err != nil {
		return fmt.Errorf("redisstore: complete claim %s: %w", key, err)
	}
	return nil
}

// AbandonClaim drops a pending claim so the next delivery does the work; a done claim stays.
func (s *Store) AbandonClaim(ctx context.Context, key string) (err error) {
	defer s.observe("claim.abandon", time.Now(), &err)
	if err := state.ValidateKey("claim key", key); err != nil {
		return err
	}
	if err := abandonClaimScript.Run(ctx, s.rdb, []string{s.keys.claim(key)}).Err(); err != nil {
		return fmt.Errorf("redisstore: abandon claim %s: %w", key, err)
	}
	return nil
}
