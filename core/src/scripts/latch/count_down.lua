-- Redisson RCountDownLatch.countDown: DECR; at 0 DEL and PUBLISH 0 (opened, waking
-- every waiter); once per request, through the request's reply latch.
-- KEYS[1] latch, KEYS[2] its channel, KEYS[3] reply latch of this request;
-- ARGV[1] 'publish' or 'spublish', ARGV[2] latch TTL in ms.
-- Reply: the count left (0: open; a latch that does not exist is open).
local first = redis.call('get', KEYS[3])
if first then
  return tonumber(first)
end
local value = redis.call('get', KEYS[1])
if not value then
  return 0
end
if not tonumber(value) then
  return redis.error_reply('WRONGTYPE the key holds a string that is not a count')
end
local left = redis.call('decr', KEYS[1])
if left <= 0 then
  redis.call('del', KEYS[1])
  redis.call(ARGV[1], KEYS[2], '0')
  left = 0
end
redis.call('set', KEYS[3], left, 'px', ARGV[2])
return left
