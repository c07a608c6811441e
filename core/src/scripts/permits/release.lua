-- Redisson RPermitExpirableSemaphore release(id): ZSCORE, ZREM, INCRBY, PUBLISH the
-- new count. A permit that had expired comes back all the same but is reported.
-- Also settles an acquire whose reply never came (ARGV[3] set): its id is released
-- if it took one, and its reply latch says '0' so a late arrival takes nothing.
-- KEYS[1] semaphore, KEYS[2] channel, KEYS[3] timeout zset, KEYS[4] reply latch of the id;
-- ARGV[1] permit id, ARGV[2] 'publish' or 'spublish', ARGV[3] latch TTL in ms or ''.
-- Reply: 1 released in time, 0 it had expired, -1 no such permit (released or returned already).
redis.replicate_commands()
if ARGV[3] ~= '' then
  redis.call('set', KEYS[4], '0', 'px', ARGV[3])
end
local expiry = redis.call('zscore', KEYS[3], ARGV[1])
if not expiry then
  return -1
end
redis.call('zrem', KEYS[3], ARGV[1])
local free = redis.call('incrby', KEYS[1], 1)
redis.call(ARGV[2], KEYS[2], free)
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if tonumber(expiry) <= now then
  return 0
end
return 1
