// Package fntest helps tests build functions the way the runtime does: a function environment
// pointing at the real Redis CI provides (REDIS_URL) or the embedded one, under a key prefix of
// the test's own, the Deps a Builder would receive, tokens for testing routes with
// authentication on, a store whose outage a test controls (Outage), and the API-contract check
// of a fuzzed request (CheckFuzzedAnswer). It may import
// runtime/fn, runtime/auth and runtime/state/redisstore.
package fntest
