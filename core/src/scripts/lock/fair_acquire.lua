-- Redisson RFairLock acquire: FIFO through the queue list and the timeout zset.
-- Waiters whose turn passed without them (dead, or gone) are dropped from the head
-- first; the lock is taken only when free and nobody is queued before this owner;
-- otherwise the owner is queued (once) with a timeout of the previous waiter's (or
-- the lock's TTL) plus the wait time, which is when it counts as dead.
-- KEYS[1] lock hash, KEYS[2] queue list, KEYS[3] timeout zset, KEYS[4] (with ARGV[4])
-- the grant key (acquire.lua);
-- ARGV[1] lease in ms, ARGV[2] owner field, ARGV[3] waiter timeout (threadWaitTime) in ms,
-- ARGV[4] (optional) '1': record the grant.
-- Reply: {1, hold count, 0} acquired ({1, 1, 0, head}: taken with waiters left, whose
-- timeouts fair_shift.lua moves up a turn next); {0, ms to wait at most before trying again}.
redis.replicate_commands()
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- The head's turn ends a wait after the lock frees at the latest. One that ends later
-- is a turn late for each queue shift that never landed (fair_shift.lua is best
-- effort: a failover can lose one): it is brought back, or a waiter that is gone
-- without leaving held the line up until then (423 s in a Cluster failover run).
local latest = now + math.max(redis.call('pttl', KEYS[1]), 0) + tonumber(ARGV[3])
while true do
  local first = redis.call('lindex', KEYS[2], 0)
  if not first then
    break
  end
  local timeout = tonumber(redis.call('zscore', KEYS[3], first))
  if timeout and timeout > now then
    if timeout > latest then
      redis.call('zadd', KEYS[3], latest, first)
    end
    break
  end
  redis.call('zrem', KEYS[3], first)
  redis.call('lpop', KEYS[2])
end
if redis.call('exists', KEYS[1]) == 0
    and (redis.call('exists', KEYS[2]) == 0 or redis.call('lindex', KEYS[2], 0) == ARGV[2]) then
  redis.call('lpop', KEYS[2])
  redis.call('zrem', KEYS[3], ARGV[2])
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  if ARGV[4] then
    redis.call('set', KEYS[4], '1:0', 'px', ARGV[1])
  end
  -- Everyone behind moves up a turn, but not here: Redisson's acquire rewrites every
  -- waiter's timeout inside the take (a ZINCRBY each, whose replies format a double:
  -- with 63 waiters most of the time a hand-off spends on the server), which delays
  -- the new holder's reply. The taker sends fair_shift.lua right after the reply
  -- instead; until it lands the timeouts are a turn late, which only lets a dead
  -- waiter keep its place a little longer.
  local head = redis.call('lindex', KEYS[2], 0)
  if head then
    return {1, 1, 0, head}
  end
  return {1, 1, 0}
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  if ARGV[4] then
    redis.call('set', KEYS[4], count .. ':0', 'px', ARGV[1])
  end
  return {1, count, 0}
end
local queued = redis.call('zscore', KEYS[3], ARGV[2])
if queued then
  local ttl = redis.call('pttl', KEYS[1])
  if ttl < 0 then
    -- Free, but someone is ahead: that waiter is woken; try again by its turn's end.
    ttl = tonumber(redis.call('zscore', KEYS[3], redis.call('lindex', KEYS[2], 0))) - now
  end
  return {0, math.max(ttl, 1)}
end
local last = redis.call('lindex', KEYS[2], -1)
local ttl
if last and last ~= ARGV[2] then
  ttl = tonumber(redis.call('zscore', KEYS[3], last)) - now
else
  ttl = redis.call('pttl', KEYS[1])
end
if ttl < 0 then
  ttl = 0
end
if redis.call('zadd', KEYS[3], now + ttl + tonumber(ARGV[3]), ARGV[2]) == 1 then
  redis.call('rpush', KEYS[2], ARGV[2])
end
return {0, math.max(redis.call('pttl', KEYS[1]), 1)}
