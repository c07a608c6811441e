-- The second half of a fair-lock take (fair_acquire.lua): everyone queued moves up a
-- turn, as Redisson's acquire does inside the take. Only while the head is still the
-- one the take left: then the queue never emptied in between, so every timeout in it
-- was set a turn late (from the take's queue or from a waiter behind it). Otherwise
-- (the head left, or took its turn and shifted itself) nothing is done: timeouts left
-- late only let a dead waiter keep its place longer; early ones would drop live ones.
-- Never sent twice for one take for the same reason.
-- KEYS[1] queue list, KEYS[2] timeout zset; ARGV[1] the head after the take,
-- ARGV[2] waiter timeout (threadWaitTime) in ms. Reply: waiters moved up.
if redis.call('lindex', KEYS[1], 0) ~= ARGV[1] then
  return 0
end
local waiting = redis.call('zrange', KEYS[2], 0, -1)
for i = 1, #waiting do
  redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), waiting[i])
end
return #waiting
