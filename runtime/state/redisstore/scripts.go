package redisstore

import "github.com/gomodule/redigo/redis"

// Script errors are returned with redis.error_reply and mapped to state errors by scriptError.
// Every script is made with key count -1 (most take a variable number of keys): Store.eval
// passes the count first.
// Scores are concatenated as strings (created_ms .. %03d) because Lua numbers print with 14
// significant digits, which would round a 16-digit score.

// createScript inserts a record and all its index entries.
// KEYS: 1 rec, 2 idx all, 3 idx status, 4 statuses set, 5 search hash, 6 seq, 7 gen,
//
//	then one (attr index, facet set) pair per attribute.
//
// ARGV: 1 id, 2 created_ms, 3 status, 4 search text, 5 attribute count n,
//
//	6..5+n attribute values (same order as the key pairs), then hash field/value pairs.
var createScript = redis.NewScript(-1, `
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.error_reply('LENS_EXISTS') end
local id = ARGV[1]
local n = tonumber(ARGV[5])
local seq = redis.call('INCR', KEYS[6])
local score = ARGV[2] .. string.format('%03d', seq % 1000)
redis.call('HSET', KEYS[1], 'score', score, unpack(ARGV, 6 + n))
redis.call('ZADD', KEYS[2], score, id)
redis.call('ZADD', KEYS[3], score, id)
redis.call('SADD', KEYS[4], ARGV[3])
if ARGV[4] ~= '' then redis.call('HSET', KEYS[5], id, ARGV[4]) end
for i = 1, n do
  redis.call('ZADD', KEYS[6 + 2 * i], score, id)
  redis.call('SADD', KEYS[7 + 2 * i], ARGV[5 + i])
end
redis.call('INCR', KEYS[7])
return score
`)

// updateScript rewrites a record at an expected version and moves its index memberships.
// KEYS: 1 rec, 2 search hash, 3 gen, 4 fence counter (any key when unfenced), 5 old status
//
//	index, 6 new status index, 7 statuses set, then nRem (index, facet) pairs to leave,
//	then nAdd (index, facet) pairs to join.
//
// ARGV: 1 id, 2 expected version, 3 fence token (0 = unfenced), 4 "1" when membership or search text
//
//	changes, 5 search text, 6 new status, 7 nRem, 8 nAdd, 9 nDel, then nRem values,
//	nAdd values, nDel hash fields to delete, then hash field/value pairs to set.
var updateScript = redis.NewScript(-1, `
local v = redis.call('HGET', KEYS[1], 'version')
if not v then return redis.error_reply('LENS_NOTFOUND') end
if v ~= ARGV[2] then return redis.error_reply('LENS_VERSION') end
local fence = tonumber(ARGV[3])
if fence > 0 then
  local issued = tonumber(redis.call('GET', KEYS[4]) or '0')
  local written = tonumber(redis.call('HGET', KEYS[1], 'fence') or '0')
  if issued > fence or written > fence then return redis.error_reply('LENS_STALEFENCE') end
  redis.call('HSET', KEYS[1], 'fence', ARGV[3])
end
local id = ARGV[1]
local score = redis.call('HGET', KEYS[1], 'score')
if KEYS[5] ~= KEYS[6] then
  redis.call('ZREM', KEYS[5], id)
  redis.call('ZADD', KEYS[6], score, id)
  redis.call('SADD', KEYS[7], ARGV[6])
end
local nRem, nAdd, nDel = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local a = 10
for i = 1, nRem do
  local index = KEYS[6 + 2 * i]
  redis.call('ZREM', index, id)
  if redis.call('EXISTS', index) == 0 then redis.call('SREM', KEYS[7 + 2 * i], ARGV[a]) end
  a = a + 1
end
local k = 8 + 2 * nRem
for i = 1, nAdd do
  redis.call('ZADD', KEYS[k], score, id)
  redis.call('SADD', KEYS[k + 1], ARGV[a])
  k = k + 2
  a = a + 1
end
if nDel > 0 then redis.call('HDEL', KEYS[1], unpack(ARGV, a, a + nDel - 1)) end
a = a + nDel
redis.call('HSET', KEYS[1], unpack(ARGV, a))
if ARGV[5] == '' then redis.call('HDEL', KEYS[2], id) else redis.call('HSET', KEYS[2], id, ARGV[5]) end
if ARGV[4] == '1' then redis.call('INCR', KEYS[3]) end
return redis.call('HINCRBY', KEYS[1], 'version', 1)
`)

// deleteScript removes a record at an expected version with every index entry, its progress
// stream and its logs, pruning facet values left without records.
// KEYS: 1 rec, 2 idx all, 3 idx status, 4 search hash, 5 gen, 6 progress, 7 logs,
//
//	8 logs dropped, then one (attr index, facet set) pair per attribute.
//
// ARGV: 1 id, 2 expected version, 3 attribute count n, 4..3+n attribute values.
var deleteScript = redis.NewScript(-1, `
local v = redis.call('HGET', KEYS[1], 'version')
if not v then return redis.error_reply('LENS_NOTFOUND') end
if v ~= ARGV[2] then return redis.error_reply('LENS_VERSION') end
local id = ARGV[1]
redis.call('DEL', KEYS[1], KEYS[6], KEYS[7], KEYS[8])
redis.call('ZREM', KEYS[2], id)
redis.call('ZREM', KEYS[3], id)
redis.call('HDEL', KEYS[4], id)
for i = 1, tonumber(ARGV[3]) do
  local index = KEYS[7 + 2 * i]
  redis.call('ZREM', index, id)
  if redis.call('EXISTS', index) == 0 then redis.call('SREM', KEYS[8 + 2 * i], ARGV[3 + i]) end
end
redis.call('INCR', KEYS[5])
return 1
`)

// listScript pages one filtered listing, newest first.
// KEYS: 1 gen, 2 target (the single source in direct mode, the cached combination
//
//	otherwise), 3 its cache marker, 4 search hash, 5 cached search matches, 6 their cache
//	marker, then the source indexes: nStatus status indexes (combined with OR) followed by
//	attribute indexes (AND).
//
// ARGV: 1 mode "direct"|"combine", 2 nStatus, 3 nAttr, 4 cache TTL ms, 5 min score,
//
//	6 max score, 7 offset, 8 limit, 9 lower-cased search needle ("" = none).
//
// Returns {total, ids}.
//
// Combinations and search matches are cached in short-lived sets whose marker holds the gen
// they were built at; a later call (the next page) reuses them while gen is unchanged, i.e.
// while no write changed index membership or search text. A marker expires 100 ms before
// its set, so a live marker with a missing set means an empty result (Redis stores no empty
// sets). Every index holds the same score for an id, so AGGREGATE MAX keeps the exact
// created score (a weighted SUM would round). Pages are cut by rank, not by score: rank
// ranges cost O(log N + page) at any depth and never skip members that share a score.
var listScript = redis.NewScript(-1, `
local ttl = tonumber(ARGV[4])
local gen = redis.call('GET', KEYS[1]) or '0'
local target = KEYS[2]
if ARGV[1] == 'combine' and redis.call('GET', KEYS[3]) ~= gen then
  local nStatus, nAttr = tonumber(ARGV[2]), tonumber(ARGV[3])
  local sources = {}
  if nStatus > 1 then
    local args = {target, nStatus}
    for i = 1, nStatus do args[#args + 1] = KEYS[6 + i] end
    args[#args + 1] = 'AGGREGATE'
    args[#args + 1] = 'MAX'
    redis.call('ZUNIONSTORE', unpack(args))
    sources[1] = target
  elseif nStatus == 1 then
    sources[1] = KEYS[7]
  end
  for i = 1, nAttr do sources[#sources + 1] = KEYS[6 + nStatus + i] end
  if #sources > 1 then
    local args = {target, #sources}
    for i = 1, #sources do args[#args + 1] = sources[i] end
    args[#args + 1] = 'AGGREGATE'
    args[#args + 1] = 'MAX'
    redis.call('ZINTERSTORE', unpack(args))
  end
  redis.call('PEXPIRE', target, ttl + 100)
  redis.call('SET', KEYS[3], gen, 'PX', ttl)
end
local minScore, maxScore = ARGV[5], ARGV[6]
local offset, limit, needle = tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9]
local function rankRange(key, lo, hi)
  local above = 0
  if hi ~= '+inf' then above = redis.call('ZCOUNT', key, '(' .. hi, '+inf') end
  return above, redis.call('ZCOUNT', key, lo, hi)
end
if needle ~= '' then
  local matches = KEYS[5]
  if redis.call('GET', KEYS[6]) ~= gen then
    redis.call('DEL', matches)
    local above, inRange = rankRange(target, minScore, maxScore)
    for pos = 0, inRange - 1, 1000 do
      local last = math.min(pos + 1000, inRange) - 1
      local members = redis.call('ZREVRANGE', target, above + pos, above + last)
      local texts = redis.call('HMGET', KEYS[4], unpack(members))
      local add = {matches}
      for i = 1, #members do
        local text = texts[i]
        if text and string.find(text, needle, 1, true) then
          -- Scores only for matches: most candidates of a selective needle never need one.
          add[#add + 1] = redis.call('ZSCORE', target, members[i])
          add[#add + 1] = members[i]
        end
      end
      if #add > 1 then redis.call('ZADD', unpack(add)) end
    end
    redis.call('PEXPIRE', matches, ttl + 100)
    redis.call('SET', KEYS[6], gen, 'PX', ttl)
  end
  target, minScore, maxScore = matches, '-inf', '+inf'
end
local above, total = rankRange(target, minScore, maxScore)
local ids = {}
if offset < total then
  ids = redis.call('ZREVRANGE', target, above + offset, above + math.min(offset + limit, total) - 1)
end
return {total, ids}
`)

// acquireLeaseScript takes a free lease (issuing the next fencing token) or extends one the
// owner already holds. KEYS: 1 lease, 2 fence counter. ARGV: 1 owner, 2 ttl ms.
// Returns {1, token} on success, {0, holder} when someone else holds it.
var acquireLeaseScript = redis.NewScript(-1, `
local holder = redis.call('HGET', KEYS[1], 'owner')
if holder then
  if holder ~= ARGV[1] then return {0, holder} end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, tonumber(redis.call('HGET', KEYS[1], 'token'))}
end
local token = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'token', token)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, token}
`)

// renewLeaseScript extends the lease only for its holder. KEYS: 1 lease.
// ARGV: 1 owner, 2 token, 3 ttl ms. Returns 1 when renewed, 0 when lost.
var renewLeaseScript = redis.NewScript(-1, `
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] and redis.call('HGET', KEYS[1], 'token') == ARGV[2] then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return 1
end
return 0
`)

// releaseLeaseScript deletes the lease only for its holder (never a bare DEL).
// KEYS: 1 lease. ARGV: 1 owner, 2 token. Returns 1 when released, 0 when lost.
var releaseLeaseScript = redis.NewScript(-1, `
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] and redis.call('HGET', KEYS[1], 'token') == ARGV[2] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`)

// A pending claim holds 'p:<incarnation> <instance>'; a done one 'd:<result>'.

// claimScript marks an unknown key pending for the owner (taking over one an earlier incarnation
// of the same instance left), or reports what is there.
// KEYS: 1 claim. ARGV: 1 pending ttl ms, 2 incarnation, 3 instance. Returns {state, result or holder}.
var claimScript = redis.NewScript(-1, `
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, 2) == 'p:' then
  local rest = string.sub(v, 3)
  local sp = string.find(rest, ' ', 1, true)
  local incarnation, instance = string.sub(rest, 1, sp - 1), string.sub(rest, sp + 1)
  if instance ~= ARGV[3] or incarnation == ARGV[2] then return {'pending', instance} end
  v = nil
end
if v == 'p' then return {'pending', ''} end -- left by a version without owners
if not v then
  redis.call('SET', KEYS[1], 'p:' .. ARGV[2] .. ' ' .. ARGV[3], 'PX', ARGV[1])
  return {'new', ''}
end
return {'done', string.sub(v, 3)}
`)

// renewClaimScript extends the owner's pending claim. KEYS: 1 claim. ARGV: 1 pending ttl ms,
// 2 the pending value. Returns 1, or 0 when the owner no longer holds it.
var renewClaimScript = redis.NewScript(-1, `
if redis.call('GET', KEYS[1]) == ARGV[2] then return redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return 0
`)

// abandonClaimScript drops the owner's pending claim and leaves any other. KEYS: 1 claim.
// ARGV: 1 the pending value.
var abandonClaimScript = redis.NewScript(-1, `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// appendLogsScript appends lines and trims the list to the newest cap lines, counting drops.
// KEYS: 1 logs, 2 dropped counter. ARGV: 1 cap, 2 lines already dropped by the caller, 3.. lines.
var appendLogsScript = redis.NewScript(-1, `
local cap = tonumber(ARGV[1])
local dropped = tonumber(ARGV[2])
local n = redis.call('RPUSH', KEYS[1], unpack(ARGV, 3))
if n > cap then
  redis.call('LTRIM', KEYS[1], -cap, -1)
  dropped = dropped + n - cap
end
if dropped > 0 then redis.call('INCRBY', KEYS[2], dropped) end
return n
`)

var allScripts = []*redis.Script{
	createScript, updateScript, deleteScript, listScript,
	acquireLeaseScript, renewLeaseScript, releaseLeaseScript,
	claimScript, renewClaimScript, abandonClaimScript, appendLogsScript,
}
