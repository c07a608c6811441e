-- Redisson RPermitExpirableSemaphore acquire: expired permits come back first (and
-- their new count is published), then one permit is taken under the caller's id
-- with its expiry (922337203685477 for none, as Redisson writes). Also answers
-- availablePermits (mode 'count': the returning of expired permits, nothing taken).
-- Time is the server's, so clients' clocks do not matter among ferrolock clients.
-- KEYS[1] semaphore (free permits), KEYS[2] timeout zset (id -> expiry ms), KEYS[3] channel,
-- KEYS[4] reply latch of this id ('0': settled, take nothing);
-- ARGV[1] 'take' or 'count', ARGV[2] lease in ms or '' (none), ARGV[3] permit id,
-- ARGV[4] 'publish' or 'spublish'.
-- Reply (take): {1, expiry} taken now, {2, expiry} taken by an earlier try with this id;
-- {0, ms until the nearest expiry, or -1}. Reply (count): {free, 0}.
redis.replicate_commands()
local forever = 922337203685477
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if ARGV[1] == 'take' then
  if redis.call('get', KEYS[4]) then
    return {0, -1}
  end
  local mine = redis.call('zscore', KEYS[2], ARGV[3])
  if mine then
    return {2, tonumber(mine)}
  end
end
local value = redis.call('get', KEYS[1])
if value and not tonumber(value) then
  return redis.error_reply('WRONGTYPE the key holds a string that is not a number of permits')
end
local expired = redis.call('zrangebyscore', KEYS[2], 0, now, 'limit', 0, 1000)
if #expired > 0 then
  redis.call('zrem', KEYS[2], unpack(expired))
  local free = redis.call('incrby', KEYS[1], #expired)
  redis.call(ARGV[4], KEYS[3], free)
end
local free = tonumber(redis.call('get', KEYS[1]) or '0')
if ARGV[1] == 'count' then
  return {free, 0}
end
if free >= 1 then
  redis.call('decrby', KEYS[1], 1)
  local expiry = forever
  if ARGV[2] ~= '' then
    expiry = now + tonumber(ARGV[2])
  end
  redis.call('zadd', KEYS[2], expiry, ARGV[3])
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then
    redis.call('pexpire', KEYS[2], ttl)
  end
  return {1, expiry}
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES')
if first[1] and tonumber(first[2]) < forever then
  return {0, math.max(tonumber(first[2]) - now, 1)}
end
return {0, -1}
