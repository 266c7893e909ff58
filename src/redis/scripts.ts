/**
 * The Lua scripts of the Redis store: each store call is one `EVALSHA` (one round trip, atomic
 * on the server). Every key a script touches starts with the namespace's `{…}:` prefix, so all
 * of a namespace's keys share one hash slot.
 *
 * Time: each script takes `now` (ms) as an argument, or reads the server's `TIME` when it is
 * empty, so routers on machines with skewed clocks agree on ages and liveness.
 *
 * @module
 * @internal
 */

const NOW = `
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end`;

/**
 * @internal KEYS[1] prefix. ARGV: now, routerId, liveMs, epoch, full (0/1), max count, longest
 * field, clock slack (ms), max routers, max fields, n, then n × (url, load, prefilling). Writes
 * this router's changes (refused when its epoch is not the stored one and the sync is not full),
 * its heartbeat, prunes routers dead for 10 × liveMs, and sums the other live routers' counts.
 *
 * Nothing read is trusted, and the work is bounded: at most `max routers` live routers are read
 * (the most recently synced), and a load hash of more than `max fields` fields is not. A router
 * whose heartbeat is dated more than the slack ahead of `now`, a load hash of another type or
 * too many fields, a field other than `l:<url>` / `p:<url>` (at most the longest field) and
 * `~epoch`, a count that is not decimal digits up to the max count, and a prefilling count
 * without its load or above it are left out, and counted (the routers left out too). Returns
 * {accepted, routers, ignored, field, sum, …} with fields `l:<url>` and `p:<url>`.
 */
export const SYNC_LOADS = `${NOW}
local prefix = KEYS[1]
local me = ARGV[2]
local live = tonumber(ARGV[3])
local epoch = ARGV[4]
local max = tonumber(ARGV[6])
local longest = tonumber(ARGV[7])
local ahead = now + tonumber(ARGV[8])
local readable = tonumber(ARGV[9])
local fields = tonumber(ARGV[10])
local n = tonumber(ARGV[11])
local gc = live * 10
local mine = prefix .. 'load:' .. me
local routers = prefix .. 'routers'
local accepted = 1
if ARGV[5] == '1' then
  redis.call('DEL', mine)
  redis.call('HSET', mine, '~epoch', epoch)
elseif redis.call('HGET', mine, '~epoch') ~= epoch then
  accepted = 0
end
if accepted == 1 then
  for i = 0, n - 1 do
    local url = ARGV[12 + i * 3]
    local l = ARGV[13 + i * 3]
    local p = ARGV[14 + i * 3]
    if l == '0' then
      redis.call('HDEL', mine, 'l:' .. url, 'p:' .. url)
    else
      redis.call('HSET', mine, 'l:' .. url, l)
      if p == '0' then redis.call('HDEL', mine, 'p:' .. url) else redis.call('HSET', mine, 'p:' .. url, p) end
    end
  end
  redis.call('PEXPIRE', mine, gc)
end
redis.call('ZADD', routers, now, me)
redis.call('PEXPIRE', routers, gc)
redis.call('ZREMRANGEBYSCORE', routers, '-inf', now - gc)
local ids = redis.call('ZRANGE', routers, ahead, now - live, 'BYSCORE', 'REV', 'LIMIT', 0, readable + 1)
local ignored = redis.call('ZCOUNT', routers, '(' .. ahead, '+inf')
local unread = 0
if #ids > readable then unread = redis.call('ZCOUNT', routers, now - live, ahead) - #ids end
local function count(f, v)
  local kind = string.sub(f, 1, 2)
  if (kind ~= 'l:' and kind ~= 'p:') or #f <= 2 or #f > longest then return nil end
  if #v == 0 or #v > 6 or string.find(v, '%D') then return nil end
  local c = tonumber(v)
  if c > max then return nil end
  return c
end
local sums = {}
local order = {}
local others = 0
local function add(f, v)
  if sums[f] == nil then
    sums[f] = v
    order[#order + 1] = f
  else
    sums[f] = sums[f] + v
  end
end
for _, id in ipairs(ids) do
  if id ~= me and others == readable then
    unread = unread + 1
  elseif id ~= me then
    others = others + 1
    local key = prefix .. 'load:' .. id
    local size = redis.pcall('HLEN', key)
    if type(size) ~= 'number' or size > fields then
      ignored = ignored + 1
    elseif size > 0 then
      local h = redis.call('HGETALL', key)
      local loads = {}
      for j = 1, #h, 2 do
        local f = h[j]
        if string.sub(f, 1, 2) == 'l:' then loads[string.sub(f, 3)] = count(f, h[j + 1]) end
      end
      for j = 1, #h, 2 do
        local f = h[j]
        local c = count(f, h[j + 1])
        local l = c and loads[string.sub(f, 3)]
        if f == '~epoch' then
        elseif c and l and c <= l then
          add(f, c)
        else
          ignored = ignored + 1
        end
      end
    end
  end
end
local out = {accepted, others, ignored + unread}
for _, f in ipairs(order) do
  out[#out + 1] = f
  out[#out + 1] = sums[f]
end
return out`;

/** @internal KEYS[1] prefix. ARGV: routerId. Removes the router's counts and heartbeat. */
export const LEAVE = `
redis.call('ZREM', KEYS[1] .. 'routers', ARGV[1])
redis.call('DEL', KEYS[1] .. 'load:' .. ARGV[1])
return 1`;

/** Refuses a call keyed with a generated secret the namespace no longer holds (ARGV[1]: its id). */
const SECRET_CHECK = `
if ARGV[1] ~= '' then
  local id = redis.pcall('HGET', KEYS[1], 'id')
  if type(id) ~= 'string' or id ~= ARGV[1] then return {'~secret'} end
end`;

/**
 * @internal KEYS[1] the namespace's secret, then the session's names under each secret in use,
 * current first. ARGV: the generated secret's id ('' for given secrets), longest value. Returns
 * {'~secret'} when that id is not the stored one; else {value, pttl} of the first name held, or
 * nil. A value longer than the longest a router writes is cut one character past it (the caller
 * finds it invalid), so a huge value never leaves the server whole; a key of another type
 * answers an empty value.
 */
export const GET_SESSION = `${SECRET_CHECK}
local longest = tonumber(ARGV[2])
for i = 2, #KEYS do
  local ttl = redis.call('PTTL', KEYS[i])
  if ttl ~= -2 then
    local value = redis.pcall('GETRANGE', KEYS[i], 0, longest)
    if type(value) ~= 'string' then return {'', -1} end
    return {value, ttl}
  end
end
return false`;

/**
 * @internal KEYS[1] the namespace's secret, KEYS[2] the session's name under the current one.
 * ARGV: the generated secret's id ('' for given secrets), value, ttlMs. Returns {'~secret'}
 * when that id is not the stored one.
 */
export const PUT_SESSION = `${SECRET_CHECK}
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
return 1`;

/**
 * @internal KEYS[1] the namespace's secret. ARGV: a proposed id and key (64 hex digits), rotate
 * (0/1). Returns the stored secret {id, key, previous or ''}, storing the proposal first when
 * the namespace holds none (or nothing valid: a key of another type, fields out of shape) — the
 * first router to ask sets it, every other reads it — or when rotating, which keeps the current
 * key as `previous`.
 */
export const SESSION_SECRET = `
local k = KEYS[1]
local id, key, previous = false, false, false
if redis.call('TYPE', k).ok == 'hash' then
  local f = redis.call('HMGET', k, 'id', 'key', 'previous')
  id, key, previous = f[1], f[2], f[3]
end
local function hex(s) return s and #s == 64 and not string.find(s, '[^0-9a-f]') end
local valid = id and #id > 0 and #id <= 64 and hex(key)
if valid and ARGV[3] ~= '1' then
  return {id, key, hex(previous) and previous or ''}
end
redis.call('DEL', k)
if valid then
  redis.call('HSET', k, 'id', ARGV[1], 'key', ARGV[2], 'previous', key)
  return {ARGV[1], ARGV[2], key}
end
redis.call('HSET', k, 'id', ARGV[1], 'key', ARGV[2])
return {ARGV[1], ARGV[2], ''}`;

/**
 * @internal KEYS: a request's block keys, in order. ARGV: now, ttlMs, maxHolders, longest URL,
 * clock slack (ms). Among the newest `maxHolders` workers recorded within the TTL on the first
 * block (and not dated more than the slack ahead of `now`), those holding the longest run of
 * leading blocks, and that run's length: a binary search for the deepest block any of them holds
 * (a worker's blocks are recorded together, so holding is monotone along the chain), one
 * `ZMSCORE` of the candidates per step. Returns {url, blocks, ageMs, …}: O(maxHolders × log
 * blocks), whatever a block holds.
 *
 * Then, for the caller to count: members of the first block no router could have recorded — a
 * URL longer than the longest (cut one character past it), or dated ahead of `now` by more than
 * the slack (a negative age) — at most `maxHolders` of each. Records dated ahead sort first, so
 * the first read shows them; only then do two more reads report them and skip past them.
 */
export const MATCH_PREFIX = `${NOW}
local cutoff = now - tonumber(ARGV[2])
local max = tonumber(ARGV[3])
local longest = tonumber(ARGV[4])
local ahead = now + tonumber(ARGV[5])
local out = {}
local odd = {}
local first = redis.call('ZRANGE', KEYS[1], '+inf', cutoff, 'BYSCORE', 'REV', 'LIMIT', 0, max, 'WITHSCORES')
if #first > 0 and (tonumber(first[2]) or math.huge) > ahead then
  -- Records dated ahead sort first: report them, and read the newest others past them.
  local later = redis.call('ZRANGE', KEYS[1], '+inf', '(' .. ahead, 'BYSCORE', 'REV', 'LIMIT', 0, max, 'WITHSCORES')
  for i = 1, #later, 2 do
    local at = tonumber(later[i + 1]) or math.huge
    odd[#odd + 1] = {string.sub(later[i], 1, longest + 1), 1, tostring(now - at)}
  end
  first = redis.call('ZRANGE', KEYS[1], ahead, cutoff, 'BYSCORE', 'REV', 'LIMIT', 0, max, 'WITHSCORES')
end
local members = {}
local score = {}
for i = 1, #first, 2 do
  local m = first[i]
  if #m <= longest then
    members[#members + 1] = m
    score[m] = tonumber(first[i + 1])
  else
    odd[#odd + 1] = {string.sub(m, 1, longest + 1), 1, '0'}
  end
end
local holding = score
local lo, hi = 1, #KEYS
if #members == 0 then hi = 1 end
while lo < hi do
  local mid = math.floor((lo + hi + 1) / 2)
  local found = nil
  local scores = redis.call('ZMSCORE', KEYS[mid], unpack(members))
  for i = 1, #members do
    local at = tonumber(scores[i])
    if at and at >= cutoff and at <= ahead then
      found = found or {}
      found[members[i]] = true
    end
  end
  if found then
    lo = mid
    holding = found
  else
    hi = mid - 1
  end
end
for _, m in ipairs(members) do
  if holding[m] then
    out[#out + 1] = m
    out[#out + 1] = lo
    out[#out + 1] = tostring(math.max(0, now - score[m]))
  end
end
for _, e in ipairs(odd) do
  out[#out + 1] = e[1]
  out[#out + 1] = e[2]
  out[#out + 1] = e[3]
end
return out`;

/**
 * @internal KEYS: block keys. ARGV: now, url, ttlMs, maxHolders, clock slack (ms). Records `url`
 * on each block (now), keeps the newest `maxHolders` — first dropping, when a block is full,
 * members dated more than the slack ahead of `now` (no router recorded them, and they would
 * outlive every real holder) — and expires the block `ttlMs` after its last record.
 */
export const RECORD_PREFIX = `${NOW}
local url = ARGV[2]
local ttl = tonumber(ARGV[3])
local max = tonumber(ARGV[4])
local ahead = now + tonumber(ARGV[5])
for _, k in ipairs(KEYS) do
  if redis.call('ZADD', k, now, url) == 1 and redis.call('ZCARD', k) > max then
    redis.call('ZREMRANGEBYSCORE', k, '(' .. ahead, '+inf')
    redis.call('ZREMRANGEBYRANK', k, 0, -(max + 1))
  end
  redis.call('PEXPIRE', k, ttl)
end
return 1`;

/** @internal ARGV: cursor, pattern. One SCAN round (500 keys) with UNLINK. Returns {cursor, deleted}. */
export const CLEAR = `
local r = redis.call('SCAN', ARGV[1], 'MATCH', ARGV[2], 'COUNT', 500)
local keys = r[2]
if #keys > 0 then redis.call('UNLINK', unpack(keys)) end
return {r[1], #keys}`;
