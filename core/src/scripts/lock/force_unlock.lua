-- Delete a lock whoever holds it, and wake a waiter.
-- KEYS[1] lock hash, KEYS[2] lock channel (a fair lock's: the prefix of its waiters'
-- channels), KEYS[3] (fair locks only) the queue list;
-- ARGV[1] 'publish' or 'spublish', ARGV[2] payload ('0': wake one; '1': wake all, read-write locks).
-- Reply: 1 if there was a lock, 0 if not. Refuses to delete a key that is not a lock.
local kind = redis.call('type', KEYS[1])['ok']
if kind == 'none' then
  return 0
end
if kind ~= 'hash' then
  return redis.error_reply('WRONGTYPE the key at the lock name holds a ' .. kind .. ', not a lock')
end
redis.call('del', KEYS[1])
local publish = 'publish'
if ARGV[1] == 'spublish' then publish = 'spublish' end
if #KEYS > 2 then
  local head = redis.call('lindex', KEYS[3], 0)
  if head then
    redis.call(publish, KEYS[2] .. ':' .. head, '0')
  end
else
  redis.call(publish, KEYS[2], ARGV[2])
end
return 1
