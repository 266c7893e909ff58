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
 * @internal KEYS[1] prefix. ARGV: now, routerId, liveMs, epoch, full (0/1), n, then n × (url,
 * load, prefilling). Writes this router's changes (refused when its epoch is not the stored
 * one and the sync is not full), its heartbeat, prunes routers dead for 10 × liveMs, and sums
 * the other live routers' counts. Returns {accepted, routers, field, sum, …} with fields
 * `l:<url>` and `p:<url>`.
 */
export const SYNC_LOADS = `${NOW}
local prefix = KEYS[1]
local me = ARGV[2]
local live = tonumber(ARGV[3])
local epoch = ARGV[4]
local n = tonumber(ARGV[6])
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
    local url = ARGV[7 + i * 3]
    local l = ARGV[8 + i * 3]
    local p = ARGV[9 + i * 3]
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
local ids = redis.call('ZRANGE', routers, now - live, '+inf', 'BYSCORE')
local sums = {}
local order = {}
local count = 0
for _, id in ipairs(ids) do
  if id ~= me then
    count = count + 1
    local h = redis.call('HGETALL', prefix .. 'load:' .. id)
    for j = 1, #h, 2 do
      local f = h[j]
      if string.byte(f, 1) ~= 126 then
        local v = tonumber(h[j + 1]) or 0
        if sums[f] == nil then
          sums[f] = v
          order[#order + 1] = f
        else
          sums[f] = sums[f] + v
        end
      end
    end
  end
end
local out = {accepted, count}
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

/** @internal KEYS[1] the session. Returns {value, pttl} or nil. */
export const GET_SESSION = `
local v = redis.call('GET', KEYS[1])
if not v then return false end
return {v, redis.call('PTTL', KEYS[1])}`;

/** @internal KEYS[1] the session. ARGV: value, ttlMs. */
export const PUT_SESSION = `
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`;

/**
 * @internal KEYS: a request's block keys, in order. ARGV: now, ttlMs, maxHolders. Among the
 * newest `maxHolders` workers recorded within the TTL on the first block, those holding the
 * longest run of leading blocks, and that run's length: a binary search for the deepest block
 * any of them holds (a worker's blocks are recorded together, so holding is monotone along the
 * chain), one ZRANGE per step. Returns {url, blocks, ageMs, …}: O(log blocks) commands.
 */
export const MATCH_PREFIX = `${NOW}
local cutoff = now - tonumber(ARGV[2])
local first = redis.call('ZRANGE', KEYS[1], '+inf', cutoff, 'BYSCORE', 'REV', 'LIMIT', 0, tonumber(ARGV[3]), 'WITHSCORES')
if #first == 0 then return {} end
local score = {}
for i = 1, #first, 2 do score[first[i]] = tonumber(first[i + 1]) end
local holding = score
local lo, hi = 1, #KEYS
while lo < hi do
  local mid = math.floor((lo + hi + 1) / 2)
  local found = nil
  for _, m in ipairs(redis.call('ZRANGE', KEYS[mid], '+inf', cutoff, 'BYSCORE', 'REV')) do
    if score[m] ~= nil then
      found = found or {}
      found[m] = true
    end
  end
  if found then
    lo = mid
    holding = found
  else
    hi = mid - 1
  end
end
local out = {}
for i = 1, #first, 2 do
  local m = first[i]
  if holding[m] then
    out[#out + 1] = m
    out[#out + 1] = lo
    out[#out + 1] = tostring(now - score[m])
  end
end
return out`;

/**
 * @internal KEYS: block keys. ARGV: now, url, ttlMs, maxHolders. Records `url` on each block
 * (now), keeps the newest `maxHolders`, and expires the block `ttlMs` after its last record.
 */
export const RECORD_PREFIX = `${NOW}
local url = ARGV[2]
local ttl = tonumber(ARGV[3])
local max = tonumber(ARGV[4])
for _, k in ipairs(KEYS) do
  if redis.call('ZADD', k, now, url) == 1 and redis.call('ZCARD', k) > max then
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
