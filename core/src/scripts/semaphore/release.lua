-- Redisson RSemaphore.release (INCRBY, PUBLISH the new count), once per request;
-- or, handing the permits straight to a waiter of the releasing client, nothing at
-- all (they never go free, so no message: semaphore/handoff.rs).
-- KEYS[1] semaphore, KEYS[2] its channel, KEYS[3] reply latch of this request;
-- ARGV[1] permits, ARGV[2] 'publish' or 'spublish', ARGV[3] latch TTL in ms,
-- ARGV[4] (optional) 'handoff'.
-- Reply: the free permits right after this release (a retry gets the first answer).
-- A hand-off's latch says 'h' before its count: give_back.lua tells it from a plain
-- release's, should the releaser never learn the outcome.
local first = redis.call('get', KEYS[3])
if first then
  return tonumber(string.match(first, '^h?(-?%d+)$'))
end
local value = redis.call('get', KEYS[1])
if value and not tonumber(value) then
  return redis.error_reply('WRONGTYPE the key holds a string that is not a number of permits')
end
if ARGV[4] == 'handoff' then
  local free = value or '0'
  redis.call('set', KEYS[3], 'h' .. free, 'px', ARGV[3])
  return tonumber(free)
end
local free = redis.call('incrby', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], free)
redis.call('set', KEYS[3], free, 'px', ARGV[3])
return free
