-- The outside observer of the election test and bench (tests/election/run.rs), on a
-- redis-server of its own: every leader writes to it with its term (enter when it
-- begins to lead, write every 20 ms while it leads, leave before it resigns or once it
-- learns of its loss); the harness marks a candidate it killed with kill -9 dead. A
-- term lower than the highest seen is refused and counted: a leader still acting
-- after a newer one began. An enter while another live candidate is inside counts as
-- two leaders at once.
-- KEYS[1] the fence hash (top, inside, refused, overlaps, writes, foreign),
-- KEYS[2] the set of candidates known dead, KEYS[3] the list of events
-- ("enter|leave|dead|refused TERM WHO MS", MS by the fence's clock).
-- ARGV[1] enter | write | leave | dead, ARGV[2] the term (0 for dead), ARGV[3] who.
-- Reply: 1 accepted, 0 refused.
local op, term, who = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local t = redis.call('time')
local ms = tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
local function event(what)
  redis.call('rpush', KEYS[3], what .. ' ' .. ARGV[2] .. ' ' .. who .. ' ' .. ms)
end
if op == 'dead' then
  redis.call('sadd', KEYS[2], who)
  event('dead')
  return 1
end
local top = tonumber(redis.call('hget', KEYS[1], 'top') or '0')
if term < top then
  redis.call('hincrby', KEYS[1], 'refused', '1')
  event('refused')
  return 0
end
local inside = redis.call('hget', KEYS[1], 'inside')
if op == 'enter' then
  if inside and inside ~= who and redis.call('sismember', KEYS[2], inside) == 0 then
    redis.call('hincrby', KEYS[1], 'overlaps', '1')
  end
  redis.call('hset', KEYS[1], 'top', ARGV[2], 'inside', who)
  event('enter')
elseif op == 'write' then
  redis.call('hincrby', KEYS[1], 'writes', '1')
  if inside ~= who then
    redis.call('hincrby', KEYS[1], 'foreign', '1')
  end
elseif op == 'leave' then
  if inside == who then
    redis.call('hdel', KEYS[1], 'inside')
  end
  event('leave')
end
return 1
