-- Who leads an election now, read in one step (a pipeline could interleave another
-- client's acquire between its reads): the lock hash, its PTTL, the fencing-token
-- counter (the latest term: every campaign that wins takes the next token) and the
-- server's clock (for how long the leader has led, from its note's "since").
-- KEYS[1] lock hash, KEYS[2] the token counter.
-- Reply: {owner fields and counts (flat), pttl, token ('' when none), seconds, microseconds}.
local t = redis.call('time')
local token = redis.call('get', KEYS[2]) or ''
return {redis.call('hgetall', KEYS[1]), redis.call('pttl', KEYS[1]), token, t[1], t[2]}
