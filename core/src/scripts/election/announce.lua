-- An election's new leader says so, right after its campaign won: it writes its
-- holder note at once (a hold's note is otherwise written only once it lasted, see
-- lock/notes.lua), with "since" by the server's clock and its term, and announces
-- itself on a channel of ferrolock's own, where observers hear every new leader in
-- order. Redisson never reads either (nor the lock channel's messages but 0 and 1).
-- KEYS[1] lock hash, KEYS[2] the note's key, KEYS[3] the leader channel;
-- ARGV[1] owner field, ARGV[2] the note (a JSON object), ARGV[3] how long the hold
-- has lasted in ms, ARGV[4] the term (the fencing token of the hold),
-- ARGV[5] 'publish' or 'spublish'.
-- Published: the note with "owner" and "lease" (the lock's PTTL, ms) added.
-- Reply: 1 announced, 0 the owner no longer holds the lock (its hold was lost).
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return 0
end
local left = redis.call('pttl', KEYS[1])
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local fields = cjson.decode(ARGV[2])
fields['since'] = now - tonumber(ARGV[3])
fields['term'] = tonumber(ARGV[4])
if left > 0 then
  redis.call('set', KEYS[2], cjson.encode(fields), 'px', left)
else
  redis.call('set', KEYS[2], cjson.encode(fields))
end
fields['owner'] = ARGV[1]
fields['lease'] = left
local publish = 'publish'
if ARGV[5] == 'spublish' then publish = 'spublish' end
redis.call(publish, KEYS[3], cjson.encode(fields))
return 1
