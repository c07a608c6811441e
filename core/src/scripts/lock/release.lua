-- Redisson RLock release, idempotent per request id through the unlock latch,
-- optionally handing the lock straight to a waiter of the releasing client.
-- KEYS[1] lock hash, KEYS[2] lock channel, KEYS[3] unlock latch of this request,
-- KEYS[4] (optional) fencing-token counter, given when the successor is fenced
-- ARGV[1] owner field, ARGV[2] lease in ms while still held (0: keep the current TTL),
-- ARGV[3] 'publish' or 'spublish', ARGV[4] latch TTL in ms,
-- ARGV[5] levels to release: a positive number, or 'all',
-- ARGV[6] (optional) successor's owner field, ARGV[7] successor's lease in ms
-- Reply: nil = not the owner, 0 = still held, 1 = released (and one waiter woken),
-- {2, token or 0} = handed to the successor (nothing published: the lock never went free).
local first = redis.call('get', KEYS[3])
if first then
  local handed = string.match(first, '^2:(%d+)$')
  if handed then
    return {2, tonumber(handed)}
  end
  return tonumber(first)
end
local held = redis.call('hget', KEYS[1], ARGV[1])
if not held then
  return nil
end
local left = 0
if ARGV[5] ~= 'all' and tonumber(held) > tonumber(ARGV[5]) then
  left = redis.call('hincrby', KEYS[1], ARGV[1], -tonumber(ARGV[5]))
end
if left > 0 then
  if ARGV[2] ~= '0' then
    redis.call('pexpire', KEYS[1], ARGV[2])
  end
  redis.call('set', KEYS[3], 0, 'px', ARGV[4])
  return 0
end
if ARGV[6] and ARGV[6] ~= '' then
  -- The token first: if the counter is broken the script fails before it writes.
  local token = 0
  if #KEYS > 3 then
    token = redis.call('incr', KEYS[4])
  end
  redis.call('del', KEYS[1])
  redis.call('hset', KEYS[1], ARGV[6], 1)
  redis.call('pexpire', KEYS[1], ARGV[7])
  redis.call('set', KEYS[3], '2:' .. token, 'px', ARGV[4])
  return {2, token}
end
redis.call('del', KEYS[1])
local publish = 'publish'
if ARGV[3] == 'spublish' then publish = 'spublish' end
redis.call(publish, KEYS[2], 0)
redis.call('set', KEYS[3], 1, 'px', ARGV[4])
return 1
