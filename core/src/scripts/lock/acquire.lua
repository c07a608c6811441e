-- Redisson RLock acquire (and RFencedLock when a token key is given).
-- KEYS[1] lock hash, KEYS[2] (optional) fencing-token counter, then the grant key
-- when ARGV[3] is given (behind Sentinel or on a Cluster: the acquire's own record,
-- '<count>:<token>' with the lease, that a read-back after a lost reply looks for)
-- ARGV[1] lease in ms, ARGV[2] owner field "<client-id>:<holder-id>", ARGV[3] (optional) '1'
-- Reply: the hold count when acquired without a token, {1, hold count, token} when
-- acquired with one, {0, pttl} when held by another owner. (A bare number, and the
-- string literal '1': a table reply, and a Lua number passed to redis.call, which
-- Redis formats with %.17g, each cost the server about as much as a redis.call.)
local grant = ARGV[3] and KEYS[#KEYS]
local fenced = #KEYS > (grant and 2 or 1)
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  -- The token first: if the counter is broken the script fails before it writes the hold.
  local token = 0
  if fenced then
    token = redis.call('incr', KEYS[2])
  end
  local count = redis.call('hincrby', KEYS[1], ARGV[2], '1')
  redis.call('pexpire', KEYS[1], ARGV[1])
  if grant then
    redis.call('set', grant, count .. ':' .. token, 'px', ARGV[1])
  end
  if fenced then
    return {1, count, token}
  end
  return count
end
return {0, redis.call('pttl', KEYS[1])}
