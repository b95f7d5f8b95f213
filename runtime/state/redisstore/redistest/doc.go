// Package redistest gives tests a Redis: Open starts an embedded Redis-compatible server and opens
// a store on it, both closed when the test ends (the one helper the packages testing against a
// real store share); StartServer runs a real redis-server on a loopback port, plain or TLS-only
// with a throwaway CA made by NewTLSFiles, for tests of what only a real server does (TLS,
// restarts). StartServer skips the test where redis-server is missing or built without TLS.
//
// It may import runtime/state/redisstore and github.com/gomodule/redigo (the few commands it
// sends a server itself, apart from the store under test), and the standard library.
package redistest
