-- Delete a lock whoever holds it, and wake one waiter.
-- KEYS[1] lock hash, KEYS[2] lock channel; ARGV[1] 'publish' or 'spublish'.
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
redis.call(publish, KEYS[2], 0)
return 1
