-- Redisson RReadWriteLock read-side release, idempotent per request id through the
-- unlock latch: each level's timeout key goes with it; while other holds remain the
-- hash lives as long as the longest of their timeout keys; the last one deletes it
-- and publishes `0`.
-- KEYS[1] lock hash, KEYS[2] `redisson_rwlock:{n}`, KEYS[3] this reader's timeout-key
-- prefix, KEYS[4] the name's prefix `{n}` (of every reader's timeout keys), KEYS[5] unlock latch;
-- ARGV[1] reader field, ARGV[2] (unused: read holds keep their own leases),
-- ARGV[3] 'publish' or 'spublish', ARGV[4] latch TTL in ms, ARGV[5] levels (a number or 'all').
-- Reply: nil = not the owner, 0 = still held, 1 = released.
local first = redis.call('get', KEYS[5])
if first then
  return tonumber(first)
end
local mode = redis.call('hget', KEYS[1], 'mode')
local held = tonumber(redis.call('hget', KEYS[1], ARGV[1]))
if not mode or not held then
  return nil
end
local levels = held
if ARGV[5] ~= 'all' then
  levels = math.min(held, tonumber(ARGV[5]))
end
for k = held - levels + 1, held do
  redis.call('del', KEYS[3] .. ':' .. k)
end
local left = held - levels
if left > 0 then
  redis.call('hincrby', KEYS[1], ARGV[1], -levels)
else
  redis.call('hdel', KEYS[1], ARGV[1])
end
local reply = 1
if left > 0 then
  reply = 0
end
if redis.call('hlen', KEYS[1]) > 1 then
  local longest = -3
  for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
    local count = tonumber(redis.call('hget', KEYS[1], field))
    if field ~= 'mode' and count then
      for k = count, 1, -1 do
        longest = math.max(longest, redis.call('pttl', KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. k))
      end
    end
  end
  if longest > 0 then
    redis.call('pexpire', KEYS[1], longest)
    redis.call('set', KEYS[5], reply, 'px', ARGV[4])
    return reply
  end
  if mode == 'write' then
    redis.call('set', KEYS[5], reply, 'px', ARGV[4])
    return reply
  end
end
redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[2], '0')
redis.call('set', KEYS[5], reply, 'px', ARGV[4])
return reply
