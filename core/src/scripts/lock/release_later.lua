-- Ends a hold later instead of now (a cron job's minimum hold, `ferrolock run
-- --min-hold`): the lock and its holder's note get a fixed expiry, after which the
-- lock is free; the holder stops renewing and forgets it, so nothing is left to
-- release it (its process may exit). Waiters wake by the lock's PTTL, as after any
-- expiry: nothing is published then.
-- KEYS[1] lock hash, KEYS[2] the holder's note; ARGV[1] owner field, ARGV[2] ms from now.
-- Reply: 1 set, 0 the owner field is gone (the hold was lost).
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('pexpire', KEYS[1], ARGV[2])
redis.call('pexpire', KEYS[2], ARGV[2])
return 1
