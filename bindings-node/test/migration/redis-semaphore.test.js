'use strict';
// docs/site/migration/redis-semaphore.md, row by row: redis-semaphore 5.8.0 and
// ferrolock's mapped call on the same scenario, against redis-servers this file starts.

const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { before, after } = require('node:test');
const Redis = require('ioredis');
const { Mutex, Semaphore, MultiSemaphore, RedlockMutex, RedlockSemaphore, TimeoutError, LostLockError, defaultTimeoutOptions } = require('redis-semaphore');
const ferrolock = require('../..');
const { Client, Redlock, NotAcquiredError, LockLostError } = ferrolock;
const { startRedis, eventually, parked } = require('../helpers');
const { rows } = require('./rows');

const servers = [];
let redis;
let client;
let other;
let n = 0;
const WATCHDOG = 1500;
const fresh = () => `rs:${process.pid}:${++n}`;
const calls = async (command) => {
  const info = await redis.info('commandstats');
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
};

before(async () => {
  for (let i = 0; i < 3; i++) servers.push(await startRedis());
  redis = new Redis(servers[0].port, '127.0.0.1');
  // A short watchdog, so that a holder hears of a forced unlock at its next renewal, soon.
  client = await Client.connect(servers[0].url, { watchdogTimeoutMs: WATCHDOG });
  other = await Client.connect(servers[0].url, { watchdogTimeoutMs: WATCHDOG });
});

after(async () => {
  await client?.close();
  await other?.close();
  redis?.disconnect();
  for (const s of servers) await s.stop();
});

// Registered after the clean-up above, so that a failed check still lets it run first.
const row = rows('redis-semaphore');

row('redis-semaphore/version', 'the version the page names, and its defaults', () => {
  assert.equal(require('redis-semaphore/package.json').version, '5.8.0');
  assert.deepEqual(defaultTimeoutOptions, { lockTimeout: 10000, acquireTimeout: 10000, acquireAttemptsLimit: Infinity, retryInterval: 10 });
});

row('redis-semaphore/mutex', 'new Mutex(): a 10 s lock refreshed by a timer; client.lock(): the watchdog lease', async () => {
  const name = fresh();
  const mutex = new Mutex(redis, name);
  await mutex.acquire();
  const pttl = await redis.pttl(`mutex:${name}`);
  assert.ok(pttl > 9000 && pttl <= 10000, `${pttl}`);
  const hold = await client.lock(name).acquire();
  const ours = await redis.pttl(name);
  assert.ok(ours > 0 && ours <= WATCHDOG, `the watchdog's lease: ${ours}`);
  await mutex.release();
  await hold.release();
});

row('redis-semaphore/acquire', 'acquire() rejects after acquireTimeout (10 s by default); ferrolock waits unless waitMs', async () => {
  const name = fresh();
  const held = new Mutex(redis, name);
  await held.acquire();
  await assert.rejects(new Mutex(redis, name, { acquireTimeout: 200 }).acquire(), TimeoutError);
  const hold = await other.lock(name).acquire();
  await assert.rejects(client.lock(name).acquire({ waitMs: 200 }), NotAcquiredError);
  const waiting = client.lock(name).acquire(); // no waitMs: as long as it takes
  await eventually(() => parked(client), { what: 'ferrolock waiting' });
  await hold.release();
  await (await waiting).release();
  await held.release();
});

row('redis-semaphore/try-acquire', 'tryAcquire() retries until acquireTimeout; acquireAttemptsLimit: 1 is one try', async () => {
  const name = fresh();
  const held = new Mutex(redis, name);
  await held.acquire();
  let sets = await calls('set');
  assert.equal(await new Mutex(redis, name, { acquireTimeout: 300, retryInterval: 10 }).tryAcquire(), false);
  assert.ok((await calls('set')) - sets > 3, 'tryAcquire() tried again and again');
  sets = await calls('set');
  assert.equal(await new Mutex(redis, name, { acquireAttemptsLimit: 1 }).tryAcquire(), false);
  assert.equal((await calls('set')) - sets, 1, 'one attempt');
  await held.release();
  const hold = await other.lock(name).acquire();
  assert.equal(await client.lock(name).tryAcquire(), false);
  assert.equal(await client.lock(name).tryAcquire({ waitMs: 300 }), false);
  await hold.release();
});

row('redis-semaphore/retry-interval', 'a waiting Mutex sends a SET every retryInterval; a waiting ferrolock lock sends nothing', async () => {
  const name = fresh();
  const held = new Mutex(redis, name);
  await held.acquire();
  // A holder that sends nothing while it holds (no renewal, no note), so that every
  // script call counted below would be the waiter's.
  const quiet = await Client.connect(servers[0].url, { holderNotes: 'off' });
  const hold = await quiet.lock(name).acquire({ leaseMs: 30000 });
  const ours = client.lock(name).acquire();
  await eventually(() => parked(client), { what: 'ferrolock parked' });
  const scripts = await calls('evalsha');
  const sets = await calls('set');
  const theirs = new Mutex(redis, name, { acquireTimeout: 30000, retryInterval: 10 });
  const theirsDone = theirs.acquire();
  await eventually(async () => (await calls('set')) >= sets + 20, { what: 'redis-semaphore polling 20 times' });
  assert.equal(await calls('evalsha'), scripts, 'the parked ferrolock waiter sent nothing');
  await held.release();
  await hold.release();
  await theirsDone;
  await theirs.release();
  await (await ours).release();
  await quiet.close();
});

row('redis-semaphore/release', 'release(); a Mutex is not re-entrant, a ferrolock handle is', async () => {
  const name = fresh();
  const mutex = new Mutex(redis, name, { acquireTimeout: 100 });
  await mutex.acquire();
  assert.equal(await mutex.tryAcquire(), false, 'the same Mutex waits for itself');
  await mutex.release();
  assert.equal(await redis.exists(`mutex:${name}`), 0);
  const lock = client.lock(name);
  assert.equal(await lock.tryAcquire(), true);
  assert.equal(await lock.tryAcquire(), true);
  await lock.release();
  assert.equal(await lock.isHeld(), true, 'one level left');
  await lock.release();
  assert.equal(await redis.exists(name), 0);
});

row('redis-semaphore/is-acquired', 'isAcquired is a local flag; isHeld() asks Redis', async () => {
  const name = fresh();
  const mutex = new Mutex(redis, name, { onLockLost: () => {} });
  await mutex.acquire();
  await redis.del(`mutex:${name}`);
  assert.equal(mutex.isAcquired, true, 'still true until its next refresh');
  mutex.stopRefresh();
  const lock = client.lock(name);
  await lock.acquire();
  await other.lock(name).forceUnlock();
  assert.equal(await lock.isHeld(), false);
  await eventually(() => lock.lost, { what: 'the loss' });
  await assert.rejects(lock.release(), LockLostError);
});

row('redis-semaphore/on-lock-lost', 'onLockLost(err) and lock.on("lost") / hold.signal', async () => {
  const name = fresh();
  const lost = [];
  const mutex = new Mutex(redis, name, { lockTimeout: 1000, refreshInterval: 20, onLockLost: (e) => lost.push(e) });
  await mutex.acquire();
  await redis.del(`mutex:${name}`);
  await eventually(() => lost.length === 1, { what: 'onLockLost' });
  assert.ok(lost[0] instanceof LostLockError);
  const events = [];
  const lock = client.lock(name).on('lost', (e) => events.push(e));
  const hold = await lock.acquire();
  await other.lock(name).forceUnlock();
  await eventually(() => events.length === 1 && hold.signal.aborted, { what: 'the lost event and the abort' });
  assert.ok(events[0] instanceof LockLostError && hold.signal.reason instanceof LockLostError);
  await assert.rejects(hold.release(), LockLostError);
});

row('redis-semaphore/unheard-loss', 'a loss nobody listens to: redis-semaphore\'s default onLockLost throws (the process dies), ferrolock warns', async () => {
  const script = (body) => spawnSync(process.execPath, ['-e', body], {
    cwd: __dirname, encoding: 'utf8', timeout: 30000, env: { ...process.env, URL: servers[0].url, PORT: String(servers[0].port) },
  });
  const theirs = script(`
    const Redis = require('ioredis'); const { Mutex } = require('redis-semaphore');
    const r = new Redis(Number(process.env.PORT), '127.0.0.1');
    (async () => {
      const m = new Mutex(r, 'unheard-${process.pid}', { lockTimeout: 1000, refreshInterval: 20 });
      await m.acquire();
      await r.del('mutex:unheard-${process.pid}');
      setTimeout(() => { console.log('still alive'); process.exit(0); }, 20000);
    })();
  `);
  assert.notEqual(theirs.status, 0);
  assert.match(theirs.stderr, /LostLockError|Lost mutex/);
  const ours = script(`
    const { Client } = require(${JSON.stringify(path.resolve(__dirname, '..', '..'))});
    const Redis = require('ioredis');
    const r = new Redis(Number(process.env.PORT), '127.0.0.1');
    const warned = new Promise((resolve) => process.on('warning', (w) => {
      if (w.code === 'FERROLOCK_LOCK_LOST') { console.log('warned', w.code); resolve(); }
    }));
    (async () => {
      const c = await Client.connect(process.env.URL, { watchdogTimeoutMs: 1500 });
      const lock = c.lock('unheard-ours-${process.pid}');
      await lock.acquire();
      await c.lock('unheard-ours-${process.pid}', { holderId: 99 }).forceUnlock();
      const late = setTimeout(() => { console.log('no warning within 20 s'); process.exit(1); }, 20000);
      await warned;
      clearTimeout(late);
      await c.close(); r.disconnect();
    })();
  `);
  assert.equal(ours.status, 0, ours.stderr);
  assert.match(ours.stdout, /warned FERROLOCK_LOCK_LOST/);
});

row('redis-semaphore/abort-signal', 'acquire(abortSignal) and acquire({ signal })', async () => {
  const name = fresh();
  const held = new Mutex(redis, name);
  await held.acquire();
  const controller = new AbortController();
  const theirs = new Mutex(redis, name, { acquireTimeout: 30000 }).acquire(controller.signal);
  const hold = await other.lock(name).acquire();
  const ours = client.lock(name).acquire({ signal: controller.signal });
  await eventually(() => parked(client), { what: 'ferrolock waiting' });
  controller.abort();
  await assert.rejects(theirs, (e) => e.name === 'AbortError');
  await assert.rejects(ours, (e) => e.name === 'AbortError' && e.code === 'ERR_CANCELLED');
  await held.release();
  await hold.release();
});

row('redis-semaphore/identifier', '{ identifier, acquiredExternally: true } and client.lock(name, { owner })', async () => {
  const name = fresh();
  const first = new Mutex(redis, name, { identifier: 'job-7' });
  await first.acquire();
  const elsewhere = new Redis(servers[0].port, '127.0.0.1');
  const second = new Mutex(elsewhere, name, { identifier: 'job-7', acquiredExternally: true });
  assert.equal(await second.tryAcquire(), true, 'takes the hold over');
  await second.release();
  assert.equal(await redis.exists(`mutex:${name}`), 0);
  first.stopRefresh();
  elsewhere.disconnect();
  const hold = await client.lock(name).acquire();
  await other.lock(name, { owner: hold.lock.owner }).release();
  assert.equal(await redis.exists(name), 0, 'another client released it by its owner field');
  await eventually(() => hold.lost, { what: 'the first holder told' });
});

row('redis-semaphore/stop-refresh', 'stopRefresh() lets the lock expire; acquire({ leaseMs }) is never renewed', async () => {
  const name = fresh();
  const mutex = new Mutex(redis, name, { lockTimeout: 300 });
  await mutex.acquire();
  mutex.stopRefresh();
  await eventually(async () => (await redis.exists(`mutex:${name}`)) === 0, { what: 'the mutex to expire' });
  const lock = client.lock(name);
  await lock.acquire({ leaseMs: 300 });
  await eventually(() => lock.lost, { what: 'the hold reported lost (a little before Redis expires it)' });
  await eventually(async () => (await redis.exists(name)) === 0, { what: 'the lock to expire' });
  await assert.rejects(lock.release(), LockLostError);
});

row('redis-semaphore/semaphore', 'new Semaphore(redis, n, 3) and semaphore(n) with trySetPermits(3): the fourth waits', async () => {
  const name = fresh();
  const theirs = [1, 2, 3].map(() => new Semaphore(redis, name, 3, { acquireAttemptsLimit: 1 }));
  for (const s of theirs) assert.equal(await s.tryAcquire(), true);
  assert.equal(await new Semaphore(redis, name, 3, { acquireAttemptsLimit: 1 }).tryAcquire(), false);
  const sem = client.semaphore(name);
  assert.equal(await sem.trySetPermits(3), true);
  const taken = await Promise.all([1, 2, 3].map(() => sem.acquire({ waitMs: 0 })));
  assert.ok(taken.every((p) => p !== null));
  assert.equal(await sem.acquire({ waitMs: 0 }), null);
  for (const s of theirs) await s.release();
  for (const p of taken) await p.release();
  // A permit is nobody's: a holder that dies does not give it back.
  const gone = await Client.connect(servers[0].url);
  assert.ok((await gone.semaphore(name).acquire()) !== null);
  assert.equal(await sem.available(), 2);
  await gone.close();
  assert.equal(await sem.available(), 2);
  await sem.release(1);
  await redis.del(name);
});

row('redis-semaphore/semaphore-acquire', 'sem.acquire() rejects with TimeoutError; acquire({ waitMs }) resolves null', async () => {
  const name = fresh();
  const held = new Semaphore(redis, name, 1);
  await held.acquire();
  await assert.rejects(new Semaphore(redis, name, 1, { acquireTimeout: 100 }).acquire(), TimeoutError);
  await held.release();
  const sem = client.semaphore(name);
  await sem.trySetPermits(1);
  const one = await sem.acquire();
  assert.equal(await sem.acquire({ waitMs: 100 }), null);
  await one.release();
  await redis.del(name);
});

row('redis-semaphore/semaphore-release', 'a Semaphore releases its own slot; ferrolock\'s permits may be released by anyone', async () => {
  const name = fresh();
  const holder = new Semaphore(redis, name, 1);
  await holder.acquire();
  const stranger = new Semaphore(redis, name, 1, { acquireAttemptsLimit: 1 });
  await stranger.release(); // not acquired: does nothing
  assert.equal(await stranger.tryAcquire(), false, 'the holder\'s slot is still taken');
  await holder.release();
  const sem = client.semaphore(name);
  await sem.trySetPermits(1);
  const permits = await sem.acquire();
  assert.equal(await other.semaphore(name).release(1), 1, 'another client gave one back');
  assert.ok((await sem.acquire({ waitMs: 0 })) !== null);
  await permits.release();
  await redis.del(name);
});

row('redis-semaphore/multi-semaphore', 'new MultiSemaphore(redis, n, 3, 2) and acquire({ permits: 2 })', async () => {
  const name = fresh();
  const two = new MultiSemaphore(redis, name, 3, 2, { acquireAttemptsLimit: 1 });
  assert.equal(await two.tryAcquire(), true);
  assert.equal(await new MultiSemaphore(redis, name, 3, 2, { acquireAttemptsLimit: 1 }).tryAcquire(), false);
  await two.release();
  const sem = client.semaphore(name);
  await sem.trySetPermits(3);
  const p = await sem.acquire({ permits: 2, waitMs: 0 });
  assert.ok(p !== null);
  assert.equal(await sem.acquire({ permits: 2, waitMs: 0 }), null);
  await p.release();
  assert.equal(await sem.available(), 3);
  await redis.del(name);
});

row('redis-semaphore/redlock-mutex', 'new RedlockMutex([r1, r2, r3], n) and Redlock.connect([...]).lock(n)', async () => {
  const name = fresh();
  const peers = servers.map((s) => new Redis(s.port, '127.0.0.1'));
  const theirs = new RedlockMutex(peers, name);
  await theirs.acquire();
  assert.equal(await new RedlockMutex(peers, name, { acquireAttemptsLimit: 1 }).tryAcquire(), false);
  const ours = await Redlock.connect(servers.map((s) => s.url));
  const lock = ours.lock(name);
  await lock.acquire();
  assert.equal(await ours.lock(name).tryAcquire(), false);
  for (const p of peers) assert.equal(await p.exists(`mutex:${name}`, name), 2);
  await theirs.release();
  await lock.release();
  await ours.close();
  for (const p of peers) p.disconnect();
});

row('redis-semaphore/redlock-semaphore', 'RedlockSemaphore has no ferrolock counterpart', async () => {
  const name = fresh();
  const peers = servers.map((s) => new Redis(s.port, '127.0.0.1'));
  const theirs = new RedlockSemaphore(peers, name, 2);
  await theirs.acquire();
  await theirs.release();
  const ours = await Redlock.connect(servers.map((s) => s.url));
  assert.equal(typeof ours.semaphore, 'undefined', 'a Redlock makes locks only');
  assert.equal(typeof ours.clients[0].semaphore, 'function', 'a semaphore lives on one deployment');
  await ours.close();
  for (const p of peers) p.disconnect();
});

row('redis-semaphore/errors', 'TimeoutError / LostLockError against NotAcquiredError / LockLostError', async () => {
  const name = fresh();
  const held = new Mutex(redis, name);
  await held.acquire();
  const theirs = await new Mutex(redis, name, { acquireTimeout: 50 }).acquire().catch((e) => e);
  assert.ok(theirs instanceof TimeoutError && /timeout/i.test(theirs.message));
  await held.release();
  const hold = await other.lock(name).acquire();
  const ours = await client.lock(name).acquire({ waitMs: 50 }).catch((e) => e);
  assert.ok(ours instanceof NotAcquiredError && ours.code === 'ERR_NOT_ACQUIRED');
  await hold.release();
});

row('redis-semaphore/keys', 'one name: different keys, no exclusion', async () => {
  const name = fresh();
  const mutex = new Mutex(redis, name);
  await mutex.acquire();
  const lock = client.lock(name);
  assert.equal(await lock.tryAcquire(), true);
  assert.equal(await redis.exists(`mutex:${name}`, name), 2);
  await mutex.release();
  await lock.release();
});
