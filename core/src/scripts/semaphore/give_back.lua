-- Settles an acquire whose reply never came: if it took permits they go back (and
-- are published); either way its latch now says '0', so that the request, should it
-- still arrive, takes nothing.
-- KEYS[1] semaphore, KEYS[2] its channel, KEYS[3] reply latch of that request;
-- ARGV[1] permits, ARGV[2] 'publish' or 'spublish', ARGV[3] latch TTL in ms.
-- Reply: 1 permits given back, 0 the request had taken nothing.
local first = redis.call('get', KEYS[3])
redis.call('set', KEYS[3], '0', 'px', ARGV[3])
if first == '1' then
  local free = redis.call('incrby', KEYS[1], ARGV[1])
  redis.call(ARGV[2], KEYS[2], free)
  return 1
end
return 0
