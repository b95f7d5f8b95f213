// Package state defines the shared state store every Lensfn function uses: records with
// indexed attributes and optimistic versions, filtered listings with counts and facets,
// leases with fencing tokens, idempotency claims, progress streams, capped logs and counters.
//
// It owns the store contract only: the interfaces, value types, sentinel errors and the
// store-agnostic Transition helper. Implementations live in subpackages (redisstore is the
// Redis one) and are checked by the conformance suite in statetest.
//
// Imports: the standard library only. Functions depend on these interfaces, never on a
// concrete store, so the Redis client stays inside redisstore.
package state
