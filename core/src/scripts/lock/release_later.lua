-- Ends a hold later instead of now (a cron job's minimum hold, `ferrolock run
-- --min-hold`): the hold moves to a field no holder writes (the owner's field with
-- ':later' added, and its note with it), so that not even its holder re-enters it,
-- and the lock gets a fixed expiry, after which it is free; the holder stops
-- renewing and forgets it, so nothing is left to release it (its process may
-- exit). Waiters wake by the lock's PTTL, as after any expiry: nothing is published.
-- KEYS[1] lock hash, KEYS[2] the holder's note, KEYS[3] the note of the new field;
-- ARGV[1] owner field, ARGV[2] ms from now, ARGV[3] the new field.
-- Reply: 1 set, 0 the owner field is gone (the hold was lost).
local count = redis.call('hget', KEYS[1], ARGV[1])
if not count then
  return 0
end
redis.call('hdel', KEYS[1], ARGV[1])
redis.call('hset', KEYS[1], ARGV[3], count)
redis.call('pexpire', KEYS[1], ARGV[2])
if redis.call('exists', KEYS[2]) == 1 then
  redis.call('rename', KEYS[2], KEYS[3])
  redis.call('pexpire', KEYS[3], ARGV[2])
end
return 1
