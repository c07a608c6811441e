-- Redisson RReadWriteLock write-side release, idempotent per request id through the
-- unlock latch. Fully released: the lock is deleted and `1` published (every waiter
-- wakes: readers may all go), or, when the writer still reads (it took read holds
-- while writing), the mode turns to 'read' and readers may join.
-- KEYS[1] lock hash, KEYS[2] `redisson_rwlock:{n}`, KEYS[3] unlock latch of this request;
-- ARGV[1] writer field, ARGV[2] lease in ms while still held (0: keep the TTL),
-- ARGV[3] 'publish' or 'spublish', ARGV[4] latch TTL in ms, ARGV[5] levels (a number or 'all').
-- Reply: nil = not the owner, 0 = still held, 1 = released.
local first = redis.call('get', KEYS[3])
if first then
  return tonumber(first)
end
if redis.call('hget', KEYS[1], 'mode') ~= 'write' then
  return nil
end
local held = redis.call('hget', KEYS[1], ARGV[1])
if not held then
  return nil
end
if ARGV[5] ~= 'all' and tonumber(held) > tonumber(ARGV[5]) then
  redis.call('hincrby', KEYS[1], ARGV[1], -tonumber(ARGV[5]))
  if ARGV[2] ~= '0' then
    redis.call('pexpire', KEYS[1], ARGV[2])
  end
  redis.call('set', KEYS[3], 0, 'px', ARGV[4])
  return 0
end
redis.call('hdel', KEYS[1], ARGV[1])
if redis.call('hlen', KEYS[1]) == 1 then
  redis.call('del', KEYS[1])
  redis.call(ARGV[3], KEYS[2], '1')
else
  redis.call('hset', KEYS[1], 'mode', 'read')
  redis.call(ARGV[3], KEYS[2], '1')
end
redis.call('set', KEYS[3], 1, 'px', ARGV[4])
return 1
