-- Stores a note about one holder (host, pid, command) beside a lock, shown by
-- status; Redisson never reads it. It lives as long as the lock's lease does now.
-- KEYS[1] lock hash; KEYS[2] the note's key; ARGV[1] owner field; ARGV[2] the note
-- ('' removes it). Reply: 1 stored or removed, 0 the owner does not hold the lock.
if ARGV[2] == '' then
  redis.call('del', KEYS[2])
  return 1
end
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return 0
end
local left = redis.call('pttl', KEYS[1])
if left > 0 then
  redis.call('set', KEYS[2], ARGV[2], 'px', left)
else
  redis.call('set', KEYS[2], ARGV[2])
end
return 1
