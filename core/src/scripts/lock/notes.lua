-- Holder notes, many at once (one cluster slot per call): written when a hold has
-- lasted long enough, refreshed when the watchdog renews it; each lives as long as
-- its lock's lease does now. Redisson never reads them.
-- KEYS[2i-1] lock hash i, KEYS[2i] the note's key;
-- ARGV[3i-2] owner field, ARGV[3i-1] the note (a JSON object; '' only refreshes its
-- expiry), ARGV[3i] how long the hold has lasted, in ms.
-- The note gets "since": the server's time when the hold began (TIME minus its age),
-- one clock for every client. Reply: one 1 (written) or 0 (not held) per hold.
local now
local out = {}
for i = 1, #KEYS / 2 do
  local lock, note = KEYS[2 * i - 1], KEYS[2 * i]
  local text = ARGV[3 * i - 1]
  if redis.pcall('hexists', lock, ARGV[3 * i - 2]) == 1 then
    local left = redis.call('pttl', lock)
    if text ~= '' then
      if not now then
        local t = redis.call('time')
        now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
      end
      local ok, fields = pcall(cjson.decode, text)
      if ok and type(fields) == 'table' then
        fields['since'] = now - tonumber(ARGV[3 * i])
        text = cjson.encode(fields)
      end
      if left > 0 then
        redis.call('set', note, text, 'px', left)
      else
        redis.call('set', note, text)
      end
    elseif left > 0 then
      redis.call('pexpire', note, left)
    end
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
