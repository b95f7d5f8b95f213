package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/lensfn/lensfn/runtime/state"
)

func validateTTL(what string, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("%w: %s %s is shorter than 1ms", state.ErrInvalid, what, ttl)
	}
	return nil
}

// AcquireLease takes the named lease for owner and issues a fencing token.
func (s *Store) AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (l state.Lease, err error) {
	defer s.observe("lease.acquire", time.Now(), &err)
	if err := state.ValidateKey("lease name", name); err != nil {
		return state.Lease{}, err
	}
	if err := state.ValidateKey("lease owner", owner); err != nil {
		return state.Lease{}, err
	}
	if err := validateTTL("lease ttl", ttl); err != nil {
		return state.Lease{}, err
	}
	// The expiry is computed from the time before the request, so the holder's view errs early.
	start := time.Now()
	reply, err := redis.Values(s.eval(ctx, acquireLeaseScript, []string{s.keys.lease(name), s.keys.fence(name)},
		owner, ttl.Milliseconds()))
	if err != nil {
		return state.Lease{}, fmt.Errorf("redisstore: acquire lease %s: %w", name, err)
	}
	if len(reply) != 2 {
		return state.Lease{}, fmt.Errorf("redisstore: acquire lease %s: unexpected reply %v", name, reply)
	}
	if ok, _ := reply[0].(int64); ok != 1 {
		return state.Lease{}, fmt.Errorf("%w: %s is held by %s", state.ErrLeaseHeld, name, text(reply[1]))
	}
	token, _ := reply[1].(int64)
	return state.Lease{Name: name, Owner: owner, Token: token, ExpiresAt: start.Add(ttl)}, nil
}

// RenewLease extends the lease while l is still its holder.
func (s *Store) RenewLease(ctx context.Context, l state.Lease, ttl time.Duration) (out state.Lease, err error) {
	defer s.observe("lease.renew", time.Now(), &err)
	if err := state.ValidateKey("lease name", l.Name); err != nil {
		return state.Lease{}, err
	}
	if err := validateTTL("lease ttl", ttl); err != nil {
		return state.Lease{}, err
	}
	start := time.Now()
	ok, err := redis.Int64(s.eval(ctx, renewLeaseScript, []string{s.keys.lease(l.Name)},
		l.Owner, strconv.FormatInt(l.Token, 10), ttl.Milliseconds()))
	if err != nil {
		return state.Lease{}, fmt.Errorf("redisstore: renew lease %s: %w", l.Name, err)
	}
	if ok != 1 {
		return state.Lease{}, fmt.Errorf("%w: %s (token %d) is no longer held by %s", state.ErrLeaseLost, l.Name, l.Token, l.Owner)
	}
	l.ExpiresAt = start.Add(ttl)
	return l, nil
}

// ReleaseLease gives the lease up while l is still its holder.
func (s *Store) ReleaseLease(ctx context.Context, l state.Lease) (err error) {
	defer s.observe("lease.release", time.Now(), &err)
	if err := state.ValidateKey("lease name", l.Name); err != nil {
		return err
	}
	ok, err := redis.Int64(s.eval(ctx, releaseLeaseScript, []string{s.keys.lease(l.Name)},
		l.Owner, strconv.FormatInt(l.Token, 10)))
	if err != nil {
		return fmt.Errorf("redisstore: release lease %s: %w", l.Name, err)
	}
	if ok != 1 {
		return fmt.Errorf("%w: %s (token %d) is no longer held by %s", state.ErrLeaseLost, l.Name, l.Token, l.Owner)
	}
	return nil
}

// LeaseHolder returns who holds the lease now; ErrNotFound when it is free.
func (s *Store) LeaseHolder(ctx context.Context, name string) (l state.Lease, err error) {
	defer s.observe("lease.holder", time.Now(), &err)
	if err := state.ValidateKey("lease name", name); err != nil {
		return state.Lease{}, err
	}
	start := time.Now()
	replies, err := s.transaction(ctx, []command{
		{"HMGET", []any{s.keys.lease(name), "owner", "token"}},
		{"PTTL", []any{s.keys.lease(name)}},
	})
	if err != nil {
		return state.Lease{}, fmt.Errorf("redisstore: lease holder %s: %w", name, err)
	}
	vals, _ := replies[0].([]any)
	pttl, _ := replies[1].(int64)
	if len(vals) != 2 {
		return state.Lease{}, fmt.Errorf("redisstore: lease holder %s: unexpected reply %v", name, replies[0])
	}
	owner, tokenText := text(vals[0]), text(vals[1])
	if owner == "" {
		return state.Lease{}, fmt.Errorf("%w: lease %s is free", state.ErrNotFound, name)
	}
	token, err := strconv.ParseInt(tokenText, 10, 64)
	if err != nil {
		return state.Lease{}, fmt.Errorf("redisstore: lease %s has a corrupt token %q", name, tokenText)
	}
	// PTTL is -1 for a lease without expiry and -2 for one gone meanwhile: expires now.
	remaining := time.Duration(max(pttl, 0)) * time.Millisecond
	return state.Lease{Name: name, Owner: owner, Token: token, ExpiresAt: start.Add(remaining)}, nil
}
