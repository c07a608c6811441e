-- Redisson RSemaphore.trySetPermits: gives a semaphore that does not exist yet its permits.
-- KEYS[1] semaphore (a string: free permits), KEYS[2] its channel;
-- ARGV[1] permits, ARGV[2] 'publish' or 'spublish'.
-- Reply: 1 set (the new count is published, waking that many waiters), 0 it existed.
if redis.call('get', KEYS[1]) then
  return 0
end
redis.call('set', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], ARGV[1])
return 1
