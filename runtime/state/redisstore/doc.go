// Package redisstore implements the state.Store contract on Redis 7.0 (the redigo client), and
// runs an embedded Redis-compatible server (miniredis) for the local stack and for tests.
//
// Keyspace (every key under one prefix carrying a hash tag, default "lens:{v1}:", so all keys
// of a script or ZINTERSTORE share one Redis Cluster slot):
//
//	rec:<kind>:<id>               hash: kind id status version created_ms updated_ms score
//	                              search doc fence, and a:<attr> per indexed attribute
//	idx:<kind>:all                zset of ids, score = created_ms*1000 + seq%1000 (time-ordered;
//	                              unique unless over 1000 records share a millisecond)
//	idx:<kind>:s:<status>         zset, same scores, one per status
//	idx:<kind>:a:<attr>:<value>   zset, same scores, one per attribute value
//	facet:<kind>:<attr>           set of the attribute's values that have at least one record
//	statuses:<kind>               set of statuses ever used (Counts reports ZCARD of each)
//	search:<kind>                 hash id -> lower-cased search text (scanned server-side by List)
//	gen:<kind>                    bumped whenever index membership or search text changes
//	list:<kind>:<digest>          short-lived cache of a filter combination or of search matches,
//	list:<kind>:<digest>:gen      with the gen it was built at: the next pages reuse it while
//	                              gen is unchanged
//	progress:<kind>:<id>          stream (XADD MAXLEN ~ N)
//	logs:<kind>:<id>              list capped at the newest N lines, logs-dropped:<kind>:<id> counts the rest
//	lease:<name>, fence:<name>    lease hash (owner, token) with PX expiry; fencing counter
//	claim:<key>                   idempotency claim: "p" pending or "d:<result>" done, with PX expiry
//	seq, counter:<name>           sequence and named counters
//
// Costs of List: a single index (or none) pages in O(log N + page); several filters run one
// ZUNIONSTORE/ZINTERSTORE per change of gen, then page the cached set; a search needle scans
// its candidates server-side once per gen (about 1-2 us per candidate, so the first page of a
// search over 100,000 unfiltered tasks holds Redis for ~0.1 s), then pages the cached matches.
//
// Every multi-key change is one Lua script that receives all its keys in KEYS; listings never
// SCAN.
//
// Connections come from one bounded pool (Options.PoolSize, default 10 per CPU): an exhausted pool
// waits, up to the caller's deadline or 4 s; a command waits 3 s for its reply (less when its
// context ends sooner), a blocking XREAD its BLOCK plus 10 s; a borrowed idle connection's TCP
// socket is checked first (under TLS too; a PING where a platform cannot check sockets), so a
// restarted server costs no failed command. Errors meaning Redis cannot be reached come back as
// state.ErrUnavailable. At most a quarter of the pool blocks in XREAD at once; further progress
// reads poll every 250 ms without BLOCK, so open event streams never starve other operations.
//
// TLS: a rediss:// URL verifies the server's certificate against the system's roots, or against
// the PEM CA certificates of Options.TLSCAFile (REDIS_CA_FILE in the runtime) for a private CA;
// an untrusted certificate fails Open saying so. No client certificate is sent.
//
// Imports: runtime/state, runtime/sockpeek (the borrowed connection's socket check), redigo and
// miniredis. This is the only package in the module allowed to import those two.
package redisstore
