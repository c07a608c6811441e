-- The outside observer's one script (tests/failover/README.md): every worker calls it
-- on a redis-server that is never failed over, at each critical section's entry and
-- exit, at each loss notice and for each client error. Times are this server's TIME.
--
-- KEYS[1] obs:res:<resource>  hash: inside, max, sections, overlaps, last_token, dup_tokens,
--                             regressed_tokens, token_incidents, behind (below last_token now),
--                             last_sid (the section that got last_token)
-- KEYS[2] obs:in:<resource>   hash: section id -> entry time (us), the sections inside now
-- KEYS[3] obs:stats           hash: global counters (overlaps, dup_tokens, ...)
-- KEYS[4] obs:olap            hash: section id -> the first overlap event it was part of
-- KEYS[5] obs:ev              hash: event id -> its time; r:<event id> -> time of its first loss notice
-- KEYS[6] obs:secs            hash: unix second -> sections entered in it
-- KEYS[7] obs:windows         list: us from an overlap's start to the first loss notice of one of its sections
-- KEYS[8] obs:log             list: one line per overlap, token anomaly and loss notice (for tracing)
--
-- ARGV[1] op: enter | exit | lost | err
-- enter: ARGV[2] holders allowed inside, ARGV[3] token ('' for none), ARGV[4] section id
-- exit:  ARGV[4] section id
-- lost:  ARGV[4] section id (of the hold the notice is about)
-- err:   ARGV[2] kind (e.g. python:acquire:ERR_CONNECTION)
local op = ARGV[1]
local t = redis.call('TIME')
-- Kept as text: a Lua number passed to redis.call is written with 14 digits.
local stamp = t[1] .. string.format('%06d', tonumber(t[2]))
local now = tonumber(stamp)
local res, ins, stats, olap, ev, secs, windows, log = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]

local function note(line)
  redis.call('RPUSH', log, stamp .. ' ' .. line)
end

if op == 'enter' then
  local allowed, token, sid = tonumber(ARGV[2]), ARGV[3], ARGV[4]
  local inside = redis.call('HINCRBY', res, 'inside', 1)
  redis.call('HINCRBY', res, 'sections', 1)
  redis.call('HINCRBY', stats, 'sections', 1)
  redis.call('HINCRBY', secs, t[1], 1)
  if inside > tonumber(redis.call('HGET', res, 'max') or '0') then
    redis.call('HSET', res, 'max', inside)
  end
  if inside > allowed then
    redis.call('HINCRBY', res, 'overlaps', 1)
    redis.call('HINCRBY', stats, 'overlaps', 1)
    local id = redis.call('HINCRBY', stats, 'overlap_events', 1)
    redis.call('HSET', ev, id, stamp)
    local others = redis.call('HKEYS', ins)
    for _, other in ipairs(others) do
      redis.call('HSETNX', olap, other, id)
    end
    redis.call('HSETNX', olap, sid, id)
    note('overlap ' .. KEYS[1] .. ' event ' .. id .. ' entering ' .. sid .. ' inside ' .. table.concat(others, ','))
  end
  redis.call('HSET', ins, sid, stamp)
  if token ~= '' then
    local last = tonumber(redis.call('HGET', res, 'last_token') or '0')
    local tk = tonumber(token)
    if tk <= last then
      -- An incident is where the counter went back; the tokens after it stay below
      -- the highest one handed out until they pass it, each counted too.
      if redis.call('HGET', res, 'behind') ~= '1' then
        redis.call('HSET', res, 'behind', '1')
        redis.call('HINCRBY', res, 'token_incidents', 1)
        note('incident ' .. KEYS[1] .. ' token ' .. token .. ' not above ' .. last)
      end
      if tk == last then
        redis.call('HINCRBY', res, 'dup_tokens', 1)
        redis.call('HINCRBY', stats, 'dup_tokens', 1)
        note('duplicate ' .. KEYS[1] .. ' token ' .. token .. ' by ' .. sid .. ', first by ' .. (redis.call('HGET', res, 'last_sid') or '?'))
      else
        redis.call('HINCRBY', res, 'regressed_tokens', 1)
        redis.call('HINCRBY', stats, 'regressed_tokens', 1)
        note('regressed ' .. KEYS[1] .. ' token ' .. token .. ' after ' .. last .. ' by ' .. sid .. ', ' .. last .. ' by ' .. (redis.call('HGET', res, 'last_sid') or '?'))
      end
    else
      redis.call('HSET', res, 'last_token', token, 'last_sid', sid, 'behind', '0')
    end
  end
  return inside
elseif op == 'exit' then
  local sid = ARGV[4]
  if redis.call('HDEL', ins, ARGV[4]) == 1 then
    redis.call('HINCRBY', res, 'inside', -1)
  else
    redis.call('HINCRBY', stats, 'exit_without_entry', 1)
  end
  return 0
elseif op == 'lost' then
  local sid = ARGV[4]
  redis.call('HINCRBY', stats, 'losses', 1)
  if redis.call('HEXISTS', ins, sid) == 1 then
    redis.call('HINCRBY', stats, 'losses_inside', 1)
  else
    redis.call('HINCRBY', stats, 'losses_outside', 1)
  end
  local id = redis.call('HGET', olap, sid)
  if id and redis.call('HSETNX', ev, 'r:' .. id, stamp) == 1 then
    redis.call('RPUSH', windows, string.format('%d', now - tonumber(redis.call('HGET', ev, id))))
  end
  note('lost ' .. KEYS[1] .. ' ' .. sid .. (id and (' overlap event ' .. id) or ''))
  return 0
elseif op == 'err' then
  redis.call('HINCRBY', stats, 'err:' .. ARGV[2], 1)
  return 0
end
return redis.error_reply('observer: unknown op ' .. tostring(op))
