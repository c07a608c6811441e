-- Settles a request whose reply never came, so that it acts exactly once: its latch
-- now says '0', so the request, should it still arrive, does nothing; and
-- - an acquire (ARGV[4] absent) that took permits gives them back;
-- - a release that handed its permits to a waiter (ARGV[4] 'handoff': release.lua),
--   which never learned it, releases them plainly, whether it ran or not.
-- Either way what is given back is published.
-- KEYS[1] semaphore, KEYS[2] its channel, KEYS[3] reply latch of that request;
-- ARGV[1] permits, ARGV[2] 'publish' or 'spublish', ARGV[3] latch TTL in ms,
-- ARGV[4] (optional) 'handoff'.
-- Reply: 1 permits given back, 0 nothing to give back.
local first = redis.call('get', KEYS[3])
local taken = first == '1'
if ARGV[4] == 'handoff' then
  taken = first == false or string.sub(first, 1, 1) == 'h'
end
redis.call('set', KEYS[3], '0', 'px', ARGV[3])
if taken then
  local free = redis.call('incrby', KEYS[1], ARGV[1])
  redis.call(ARGV[2], KEYS[2], free)
  return 1
end
return 0
