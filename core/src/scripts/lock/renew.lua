-- Watchdog renewal of many holds at once (all keys in one cluster slot per call).
-- KEYS[i] lock hash i; ARGV[1] lease in ms; ARGV[i+1] owner field of KEYS[i].
-- Reply: one 1 (renewed) or 0 (the owner field is gone: the hold is lost) per key.
-- A key that is no longer a hash counts as lost instead of failing the whole batch.
local out = {}
for i = 1, #KEYS do
  local held = redis.pcall('hexists', KEYS[i], ARGV[i + 1])
  if held == 1 then
    redis.call('pexpire', KEYS[i], ARGV[1])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
