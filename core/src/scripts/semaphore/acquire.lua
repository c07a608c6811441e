-- Takes permits if enough are free (Redisson's RSemaphore acquire: GET, then DECRBY),
-- once per request: the request's reply latch answers a retry after a lost reply,
-- and a settled request ('0', see give_back.lua) takes nothing if it arrives late.
-- KEYS[1] semaphore, KEYS[2] reply latch of this request; ARGV[1] permits, ARGV[2] latch TTL in ms.
-- Reply: 1 taken now, 2 taken by an earlier try of this request (its reply was lost),
-- 0 not enough free permits (or the request was settled).
local first = redis.call('get', KEYS[2])
if first then
  if first == '1' then
    return 2
  end
  return 0
end
local value = redis.call('get', KEYS[1])
local free = tonumber(value or '0')
if not free then
  return redis.error_reply('WRONGTYPE the key holds a string that is not a number of permits')
end
if free >= tonumber(ARGV[1]) then
  redis.call('decrby', KEYS[1], ARGV[1])
  redis.call('set', KEYS[2], '1', 'px', ARGV[2])
  return 1
end
return 0
