// Package statetest is the conformance suite for state.Store implementations: every store
// must pass Run. It checks behaviour only through the state interfaces (records, indexes,
// listings against a brute-force reference, counts, facets, transitions, leases and fencing,
// claims, progress streams, capped logs) and hammers the store from many goroutines.
//
// Imports: runtime/state, the standard library and testing. Timing-based cases (lease and
// claim expiry, blocking reads) use short real-time waits, so a store must expire keys by
// wall clock.
//
// One file per part of the store it checks, as runtime/state/redisstore is split: records.go
// (create, get, update, delete, transitions, counters), list.go (queries against a brute-force
// reference, counts and facets), leases.go, claims.go, progress.go, and hammer.go (the
// concurrency tests); statetest.go holds Run, the table of them all.
package statetest
