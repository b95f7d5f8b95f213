// Package redistest opens a store on an embedded Redis-compatible server for a test, both closed
// when the test ends: the one helper the packages testing against a real store share.
//
// It may import runtime/state/redisstore.
package redistest
