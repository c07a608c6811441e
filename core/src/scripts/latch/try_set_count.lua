-- Redisson RCountDownLatch.trySetCount: EXISTS, SET, PUBLISH 1 (a new count); a key of
-- another type is refused instead of counting as a latch (Redisson only asks EXISTS).
-- KEYS[1] latch (a string: the count), KEYS[2] its channel; ARGV[1] count, ARGV[2] 'publish' or 'spublish'.
-- Reply: 1 set, 0 the latch existed (it is still counting down).
local kind = redis.call('type', KEYS[1])['ok']
if kind == 'string' then
  return 0
end
if kind ~= 'none' then
  return redis.error_reply('WRONGTYPE the key holds a ' .. kind .. ', not a count-down latch')
end
redis.call('set', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], '1')
return 1
