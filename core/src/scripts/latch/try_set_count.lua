-- Redisson RCountDownLatch.trySetCount: EXISTS, SET, PUBLISH 1 (a new count).
-- KEYS[1] latch (a string: the count), KEYS[2] its channel; ARGV[1] count, ARGV[2] 'publish' or 'spublish'.
-- Reply: 1 set, 0 the latch existed (it is still counting down).
if redis.call('exists', KEYS[1]) == 1 then
  return 0
end
redis.call('set', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], '1')
return 1
