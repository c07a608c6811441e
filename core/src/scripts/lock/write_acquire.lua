-- Redisson RReadWriteLock write side: the hash `n` with mode 'write' and the field
-- `<owner>:write`; re-entrant; refused while anyone else reads or writes.
-- KEYS[1] lock hash, KEYS[2] (with ARGV[3]) the grant key (acquire.lua);
-- ARGV[1] lease in ms, ARGV[2] writer field `<owner>:write`, ARGV[3] (optional) '1': record the grant.
-- Reply: {1, hold count, 0} acquired; {0, pttl} held by others.
local mode = redis.call('hget', KEYS[1], 'mode')
if not mode then
  redis.call('hset', KEYS[1], 'mode', 'write', ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  if ARGV[3] then
    redis.call('set', KEYS[2], '1:0', 'px', ARGV[1])
  end
  return {1, 1, 0}
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  local left = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], math.max(left, tonumber(ARGV[1])))
  if ARGV[3] then
    redis.call('set', KEYS[2], count .. ':0', 'px', ARGV[1])
  end
  return {1, count, 0}
end
return {0, redis.call('pttl', KEYS[1])}
