-- Redisson RReadWriteLock read side: the hash `n` with mode 'read' and one field per
-- reader (its hold count); each read hold also has a key
-- `{n}:<owner>:rwlock_timeout:<k>` with the lease, so that a dead reader's holds
-- expire while others keep the hash alive. A writer may take read holds too.
-- KEYS[1] lock hash, KEYS[2] this reader's timeout-key prefix `{n}:<owner>:rwlock_timeout`,
-- KEYS[3] (with ARGV[4]) the grant key (acquire.lua);
-- ARGV[1] lease in ms, ARGV[2] reader field `<owner>`, ARGV[3] its writer field `<owner>:write`,
-- ARGV[4] (optional) '1': record the grant.
-- Reply: {1, hold count, 0} acquired; {0, pttl} a writer holds it.
local mode = redis.call('hget', KEYS[1], 'mode')
if not mode then
  redis.call('hset', KEYS[1], 'mode', 'read', ARGV[2], 1)
  redis.call('set', KEYS[2] .. ':1', 1, 'px', ARGV[1])
  redis.call('pexpire', KEYS[1], ARGV[1])
  if ARGV[4] then
    redis.call('set', KEYS[3], '1:0', 'px', ARGV[1])
  end
  return {1, 1, 0}
end
if mode == 'read' or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
  local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('set', KEYS[2] .. ':' .. count, 1, 'px', ARGV[1])
  local left = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], math.max(left, tonumber(ARGV[1])))
  if ARGV[4] then
    redis.call('set', KEYS[3], count .. ':0', 'px', ARGV[1])
  end
  return {1, count, 0}
end
return {0, redis.call('pttl', KEYS[1])}
