-- Watchdog renewal of read holds, many at once: each reader's hold keeps the hash
-- and renews its own timeout keys (`{n}:<owner>:rwlock_timeout:1..count`).
-- KEYS[i] lock hash i; ARGV[1] lease in ms; ARGV[i+1] reader field of KEYS[i].
-- Reply: one 1 (renewed) or 0 (the field is gone: the hold is lost) per key.
local out = {}
for i = 1, #KEYS do
  local count = tonumber(redis.pcall('hget', KEYS[i], ARGV[i + 1]))
  if count then
    local prefix = KEYS[i]
    if not string.find(prefix, '{', 1, true) then
      prefix = '{' .. prefix .. '}'
    end
    for k = 1, count do
      redis.call('pexpire', prefix .. ':' .. ARGV[i + 1] .. ':rwlock_timeout:' .. k, ARGV[1])
    end
    local left = redis.call('pttl', KEYS[i])
    redis.call('pexpire', KEYS[i], math.max(left, tonumber(ARGV[1])))
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
