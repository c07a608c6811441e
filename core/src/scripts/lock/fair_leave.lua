-- A fair-lock waiter that gives up leaves the queue (Redisson's acquireFailed):
-- everyone behind it moves up a turn; if it was the head of a free lock, the new
-- head is woken on its channel, since no release will come to wake it.
-- KEYS[1] lock hash, KEYS[2] queue list, KEYS[3] timeout zset, KEYS[4] lock channel;
-- ARGV[1] owner field, ARGV[2] waiter timeout in ms, ARGV[3] 'publish' or 'spublish'.
-- Reply: 1 it was queued, 0 it was not.
local queue = redis.call('lrange', KEYS[2], 0, -1)
local at = 0
for i = 1, #queue do
  if queue[i] == ARGV[1] then
    at = i
    break
  end
end
if at == 0 then
  return 0
end
for i = at + 1, #queue do
  redis.call('zincrby', KEYS[3], -tonumber(ARGV[2]), queue[i])
end
redis.call('zrem', KEYS[3], ARGV[1])
redis.call('lrem', KEYS[2], 0, ARGV[1])
if at == 1 and redis.call('exists', KEYS[1]) == 0 then
  local head = redis.call('lindex', KEYS[2], 0)
  if head then
    redis.call(ARGV[3], KEYS[4] .. ':' .. head, '0')
  end
end
return 1
