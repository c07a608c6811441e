-- Redisson RSemaphore.release (INCRBY, PUBLISH the new count), once per request.
-- KEYS[1] semaphore, KEYS[2] its channel, KEYS[3] reply latch of this request;
-- ARGV[1] permits, ARGV[2] 'publish' or 'spublish', ARGV[3] latch TTL in ms.
-- Reply: the free permits right after this release (a retry gets the first answer).
local first = redis.call('get', KEYS[3])
if first then
  return tonumber(first)
end
local value = redis.call('get', KEYS[1])
if value and not tonumber(value) then
  return redis.error_reply('WRONGTYPE the key holds a string that is not a number of permits')
end
local free = redis.call('incrby', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], free)
redis.call('set', KEYS[3], free, 'px', ARGV[3])
return free
