-- Changes the lease of a hold taken with an explicit lease (redis-py's extend and
-- reacquire); the watchdog's holds are renewed by renew.lua instead.
-- KEYS[1] lock hash; ARGV[1] owner field; ARGV[2] lease in ms;
-- ARGV[3] 'add' (add to what is left) or 'set' (replace what is left).
-- Reply: the lease left now in ms, or -1 if the owner field is gone (the hold is lost).
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return -1
end
local ttl = tonumber(ARGV[2])
if ARGV[3] == 'add' then
  local left = redis.call('pttl', KEYS[1])
  if left > 0 then
    ttl = ttl + left
  end
end
redis.call('pexpire', KEYS[1], ttl)
return ttl
