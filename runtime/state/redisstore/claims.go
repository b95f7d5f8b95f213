package redisstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/lensfn/lensfn/runtime/state"
)

// pendingValue is what a pending claim holds: who works on it.
func pendingValue(o state.ClaimOwner) string { return "p:" + o.Incarnation + " " + o.Instance }

func validateOwner(o state.ClaimOwner) error {
	if err := state.ValidateKey("claim owner instance", o.Instance); err != nil {
		return err
	}
	if err := state.ValidateKey("claim owner incarnation", o.Incarnation); err != nil {
		return err
	}
	if strings.Contains(o.Incarnation, " ") {
		return fmt.Errorf("%w: a claim owner's incarnation holds no space", state.ErrInvalid)
	}
	return nil
}

// Claim marks key pending for owner for pendingTTL when unknown (or left by an earlier
// incarnation of owner's instance), or reports what another attempt left.
func (s *Store) Claim(ctx context.Context, key string, owner state.ClaimOwner, pendingTTL time.Duration) (c state.Claim, err error) {
	defer s.observe("claim", time.Now(), &err)
	if err := state.ValidateKey("claim key", key); err != nil {
		return state.Claim{}, err
	}
	if err := validateOwner(owner); err != nil {
		return state.Claim{}, err
	}
	if err := validateTTL("pending ttl", pendingTTL); err != nil {
		return state.Claim{}, err
	}
	reply, err := redis.Strings(s.eval(ctx, claimScript, []string{s.keys.claim(key)}, pendingTTL.Milliseconds(),
		owner.Incarnation, owner.Instance))
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
		return state.Claim{State: state.ClaimPending, Holder: reply[1]}, nil
	case "done":
		return state.Claim{State: state.ClaimDone, Result: reply[1]}, nil
	}
	return state.Claim{}, fmt.Errorf("redisstore: claim %s: unexpected state %q", key, reply[0])
}

// RenewClaim extends owner's pending claim; ErrNotFound when owner no longer holds it.
func (s *Store) RenewClaim(ctx context.Context, key string, owner state.ClaimOwner, pendingTTL time.Duration) (err error) {
	defer s.observe("claim.renew", time.Now(), &err)
	if err := state.ValidateKey("claim key", key); err != nil {
		return err
	}
	if err := validateOwner(owner); err != nil {
		return err
	}
	if err := validateTTL("pending ttl", pendingTTL); err != nil {
		return err
	}
	n, err := redis.Int(s.eval(ctx, renewClaimScript, []string{s.keys.claim(key)}, pendingTTL.Milliseconds(), pendingValue(owner)))
	if err != nil {
		return fmt.Errorf("redisstore: renew claim %s: %w", key, err)
	}
	if n == 0 {
		return fmt.Errorf("%w: claim %s is not pending for %s", state.ErrNotFound, key, owner.Instance)
	}
	return nil
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
	if _, err := s.do(ctx, "SET", s.keys.claim(key), "d:"+result, "PX", doneTTL.Milliseconds()); err != nil {
		return fmt.Errorf("redisstore: complete claim %s: %w", key, err)
	}
	return nil
}

// AbandonClaim drops owner's pending claim so the next delivery does the work; a done claim,
// or one another owner holds, stays.
func (s *Store) AbandonClaim(ctx context.Context, key string, owner state.ClaimOwner) (err error) {
	defer s.observe("claim.abandon", time.Now(), &err)
	if err := state.ValidateKey("claim key", key); err != nil {
		return err
	}
	if err := validateOwner(owner); err != nil {
		return err
	}
	if _, err := s.eval(ctx, abandonClaimScript, []string{s.keys.claim(key)}, pendingValue(owner)); err != nil {
		return fmt.Errorf("redisstore: abandon claim %s: %w", key, err)
	}
	return nil
}
