// Package statetest is the conformance suite for state.Store implementations: every store
// must pass Run. It checks behaviour only through the state interfaces (records, indexes,
// listings against a brute-force reference, counts, facets, transitions, leases and fencing,
// claims, progress streams, capped logs) and hammers the store from many goroutines.
//
// Imports: runtime/state, the standard library and testing. Timing-based cases (lease and
// claim expiry, blocking reads) use short real-time waits, so a store must expire keys by
// wall clock.
package statetest
