-- Redisson RSemaphore.drainPermits: takes every free permit.
-- KEYS[1] semaphore. Reply: how many were taken.
local value = redis.call('get', KEYS[1])
if not value then
  return 0
end
local free = tonumber(value)
if not free then
  return redis.error_reply('WRONGTYPE the key holds a string that is not a number of permits')
end
redis.call('set', KEYS[1], 0)
return free
