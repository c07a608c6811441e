-- Redisson RFairLock release, idempotent per request id through the unlock latch:
-- when the lock goes free, only the queue's head is woken, on its own channel
-- (`<channel>:<its owner field>`); nothing is published when nobody waits.
-- KEYS[1] lock hash, KEYS[2] queue list, KEYS[3] timeout zset, KEYS[4] lock channel
-- (the prefix of the waiters' channels), KEYS[5] unlock latch of this request;
-- ARGV[1] owner field, ARGV[2] lease in ms while still held (0: keep the TTL),
-- ARGV[3] 'publish' or 'spublish', ARGV[4] latch TTL in ms, ARGV[5] levels (a number or 'all').
-- Reply: nil = not the owner, 0 = still held, 1 = released.
redis.replicate_commands()
local first = redis.call('get', KEYS[5])
if first then
  return tonumber(first)
end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
while true do
  local head = redis.call('lindex', KEYS[2], 0)
  if not head then
    break
  end
  local timeout = tonumber(redis.call('zscore', KEYS[3], head))
  if timeout and timeout > now then
    break
  end
  redis.call('zrem', KEYS[3], head)
  redis.call('lpop', KEYS[2])
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
  redis.call('set', KEYS[5], 0, 'px', ARGV[4])
  return 0
end
redis.call('del', KEYS[1])
redis.call('set', KEYS[5], 1, 'px', ARGV[4])
local head = redis.call('lindex', KEYS[2], 0)
if head then
  redis.call(ARGV[3], KEYS[4] .. ':' .. head, '0')
end
return 1
