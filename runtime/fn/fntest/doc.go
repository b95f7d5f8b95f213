// Package fntest helps tests build functions the way the runtime does: a function environment
// pointing at the real Redis CI provides (REDIS_URL) or the embedded one, under a key prefix of
// the test's own, and the Deps a Builder would receive, and tokens for testing routes with authentication on. It may
// import runtime/fn and runtime/auth.
package fntest
