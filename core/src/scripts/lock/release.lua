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
--
-- The latch: request ids are fresh, so only a retry (after a lost reply) or a late
-- copy of an earlier attempt can find this request's latch. Instead of reading it
-- first on every call, the script decides its answer, then writes the latch with NX
-- before it changes anything: if the latch was there, an earlier attempt of this
-- request already ran, and its answer is returned with nothing changed.
local held = redis.call('hget', KEYS[1], ARGV[1])
local partial = held and ARGV[5] ~= 'all' and tonumber(held) > tonumber(ARGV[5])
local successor = held and not partial and ARGV[6] and ARGV[6] ~= ''
-- String literals throughout: Redis formats a Lua number passed to redis.call with %.17g.
local answer = '1'
local token = 0
if partial then
  answer = '0'
elseif successor then
  -- The token first: if the counter is broken the script fails before it writes.
  -- (A late copy of an attempt that already ran bumps the counter once more: a gap.)
  if #KEYS > 3 then
    token = redis.call('incr', KEYS[4])
  end
  answer = '2:' .. token
end
if not held or not redis.call('set', KEYS[3], answer, 'px', ARGV[4], 'nx') then
  -- Not the owner (no latch), or an earlier attempt of this request ran: its answer.
  local first = redis.call('get', KEYS[3])
  if not first then
    return nil
  end
  local handed = string.match(first, '^2:(%d+)$')
  if handed then
    return {2, tonumber(handed)}
  end
  return tonumber(first)
end
if partial then
  redis.call('hincrby', KEYS[1], ARGV[1], '-' .. ARGV[5])
  if ARGV[2] ~= '0' then
    redis.call('pexpire', KEYS[1], ARGV[2])
  end
  return 0
end
redis.call('del', KEYS[1])
if successor then
  redis.call('hset', KEYS[1], ARGV[6], '1')
  redis.call('pexpire', KEYS[1], ARGV[7])
  return {2, token}
end
local publish = 'publish'
if ARGV[3] == 'spublish' then publish = 'spublish' end
redis.call(publish, KEYS[2], '0')
return 1
