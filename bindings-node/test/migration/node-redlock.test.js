'use strict';
// docs/site/migration/node-redlock.md, row by row: node-redlock 4.2.0 (npm's `latest`)
// and 5.0.0-beta.2 (installed side by side as `redlock-v5`), and ferrolock's mapped
// call on the same scenario, against redis-servers this file starts.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { before, after } = require('node:test');
const Redis = require('ioredis');
const RedlockV4 = require('redlock');
const { default: RedlockV5, ExecutionError, ResourceLockedError } = require('redlock-v5');
const Bluebird = require('bluebird');
const ferrolock = require('../..');
const { Client, Redlock, NotAcquiredError, LockLostError, WrongTypeError, multiLock } = ferrolock;
const { startRedis, eventually, parked } = require('../helpers');
const { rows } = require('./rows');

const servers = [];
let redis; // ioredis on the first server: the peers' client and the test's eyes
let client; // ferrolock on the first server
let other; // a second ferrolock client (another process, as far as Redis can tell)
let n = 0;
const fresh = () => `nr:${process.pid}:${++n}`;
const fast = { retryCount: 3, retryDelay: 10, retryJitter: 5 };
const WATCHDOG = 1500;

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
const row = rows('node-redlock');

function v5(clients = [redis], settings = fast) {
  return new RedlockV5(clients, settings);
}
function v4(clients = [redis], settings = fast) {
  return new RedlockV4(clients, settings);
}

row('node-redlock/versions', 'the versions the page names', () => {
  const version = (dir) => JSON.parse(fs.readFileSync(path.join(__dirname, 'node_modules', dir, 'package.json'), 'utf8')).version;
  assert.equal(version('redlock'), '4.2.0');
  assert.equal(version('redlock-v5'), 'v5.0.0-beta.2'); // its package.json says so, with the v
});

row('node-redlock/connect', 'a Redlock over three servers: both hold all three', async () => {
  const name = fresh();
  const peers = servers.map((s) => new Redis(s.port, '127.0.0.1'));
  const theirs = await v5(peers).acquire([`${name}:v5`], 5000);
  const theirs4 = await v4(peers).lock(`${name}:v4`, 5000);
  const ours = await Redlock.connect(servers.map((s) => s.url));
  const hold = await ours.lock(name).acquire();
  for (const p of peers) {
    assert.equal(await p.exists(`${name}:v5`, `${name}:v4`), 2);
    assert.equal(await p.type(name), 'hash');
  }
  await theirs.release();
  await theirs4.unlock();
  await hold.release();
  await ours.close();
  assert.equal(ours.closed, true);
  for (const p of peers) p.disconnect();
});

row('node-redlock/one-client', 'one server: node-redlock is not re-entrant, a ferrolock handle is', async () => {
  const name = fresh();
  const theirs = v5([redis], { retryCount: 0 });
  const held = await theirs.acquire([name], 5000);
  await assert.rejects(theirs.acquire([name], 5000), ExecutionError);
  await held.release();
  const lock = client.lock(name);
  assert.equal(await lock.tryAcquire(), true);
  assert.equal(await lock.tryAcquire(), true);
  assert.equal(await lock.holdCount(), 2);
  await lock.releaseAll();
});

row('node-redlock/acquire', 'acquire(resources, 5000) and acquire({ leaseMs: 5000 }): the same 5 s expiry', async () => {
  const name = fresh();
  const a = await v5().acquire([`${name}:v5`], 5000);
  const b = await v4().lock(`${name}:v4`, 5000);
  const hold = await client.lock(name).acquire({ leaseMs: 5000 });
  for (const key of [`${name}:v5`, `${name}:v4`, name]) {
    const pttl = await redis.pttl(key);
    assert.ok(pttl > 4000 && pttl <= 5000, `${key}: ${pttl}`);
  }
  await a.release();
  await b.unlock();
  await hold.release();
});

row('node-redlock/no-renewal', 'node-redlock lets a lock expire while held; without leaseMs ferrolock renews it', async () => {
  const name = fresh();
  await v5().acquire([`${name}:v5`], 200);
  await eventually(async () => (await redis.exists(`${name}:v5`)) === 0, { what: 'the peer lock to expire' });
  const short = await Client.connect(servers[0].url, { watchdogTimeoutMs: 1500 });
  const hold = await short.lock(name).acquire();
  let last = await redis.pttl(name);
  let renewals = 0;
  await eventually(async () => {
    const now = await redis.pttl(name);
    assert.ok(now > 0, 'expired');
    if (now > last) renewals++;
    last = now;
    return renewals >= 2;
  }, { what: 'two renewals' });
  assert.equal(hold.lost, false);
  await hold.release();
  await short.close();
});

row('node-redlock/multi-resource', 'several resources on one server: all or nothing', async () => {
  const name = fresh();
  const blocker = await v5().acquire([`${name}:b`], 5000);
  await assert.rejects(v5().acquire([`${name}:a`, `${name}:b`], 5000), ExecutionError);
  assert.equal(await redis.exists(`${name}:a`), 0, 'nothing of it left held');
  await blocker.release();
  const both = await v5().acquire([`${name}:a`, `${name}:b`], 5000);
  assert.equal(await redis.exists(`${name}:a`, `${name}:b`), 2);
  await both.release();
  const theirsB = await other.lock(`${name}:b`).acquire();
  const ours = multiLock([client.lock(`${name}:a`), client.lock(`${name}:b`)]);
  assert.equal(await ours.tryAcquire(), false);
  assert.equal(await redis.exists(`${name}:a`), 0, 'nothing of it left held');
  await theirsB.release();
  assert.equal(await ours.tryAcquire(), true);
  assert.equal(await redis.exists(`${name}:a`, `${name}:b`), 2);
  await ours.release();
});

row('node-redlock/retry', 'retryCount/retryDelay/retryJitter (defaults 10, 200, 100) against waitMs', async () => {
  assert.deepEqual([v5([redis], {}).settings.retryCount, v5([redis], {}).settings.retryDelay, v5([redis], {}).settings.retryJitter], [10, 200, 100]);
  const plain = v4([redis], {});
  assert.deepEqual([plain.retryCount, plain.retryDelay, plain.retryJitter], [10, 200, 100]);
  const name = fresh();
  const held = await v5().acquire([name], 5000);
  const err5 = await v5().acquire([name], 5000).catch((e) => e);
  assert.ok(err5 instanceof ExecutionError);
  assert.equal(err5.attempts.length, 4, 'retryCount 3: 4 attempts');
  const err4 = await v4().lock(name, 5000).catch((e) => e);
  assert.ok(err4 instanceof RedlockV4.LockError);
  assert.equal(err4.attempts, 4);
  await held.release();
  const hold = await other.lock(name).acquire();
  await assert.rejects(client.lock(name).acquire({ waitMs: 100 }), NotAcquiredError);
  await hold.release();
});

row('node-redlock/retry-forever', 'retryCount: -1 waits until the release, as acquire() without waitMs', async () => {
  const name = fresh();
  const held = await v5().acquire([`${name}:v5`], 5000);
  const theirs = v5([redis], { retryCount: -1, retryDelay: 10, retryJitter: 0 }).acquire([`${name}:v5`], 5000);
  const hold = await other.lock(name).acquire();
  const ours = client.lock(name).acquire();
  await eventually(() => parked(client), { what: 'ferrolock waiting' });
  await held.release();
  await hold.release();
  await (await theirs).release();
  await (await ours).release();
});

row('node-redlock/retry-zero', 'retryCount: 0 is one attempt, as tryAcquire(); per call, v4 ignores 0', async () => {
  const name = fresh();
  const held = await v5().acquire([name], 5000);
  const once = await v5([redis], { retryCount: 0 }).acquire([name], 5000).catch((e) => e);
  assert.equal(once.attempts.length, 1);
  const perCall = await v5().acquire([name], 5000, { retryCount: 0 }).catch((e) => e);
  assert.equal(perCall.attempts.length, 1);
  const v4once = await v4([redis], { retryCount: 0, retryDelay: 10 }).lock(name, 5000).catch((e) => e);
  assert.equal(v4once.attempts, 1);
  // v4 reads per-call options with `||`: a per-call 0 falls back to the setting (3 here).
  const v4perCall = await v4().acquireWithOptions(name, 5000, { retryCount: 0 }).catch((e) => e);
  assert.equal(v4perCall.attempts, 4);
  await held.release();
  const hold = await other.lock(name).acquire();
  assert.equal(await client.lock(name).tryAcquire(), false);
  await hold.release();
});

row('node-redlock/drift', 'driftFactor 0.01: node-redlock shortens lock.expiration, ferrolock reports the loss before Redis expires the key', async () => {
  assert.equal(v5([redis], {}).settings.driftFactor, 0.01);
  const name = fresh();
  const before = Date.now();
  const theirs = await v5().acquire([`${name}:v5`], 10000);
  const after = Date.now();
  // expiration = start + duration - (duration x 0.01 + 2), start taken inside acquire().
  assert.ok(theirs.expiration >= before + 9898 && theirs.expiration <= after + 9898, `${theirs.expiration - before}`);
  await theirs.release();
  const drifty = await Client.connect(servers[0].url, { driftFactor: 0.5 });
  const hold = await drifty.lock(name).acquire({ leaseMs: 1000 });
  await eventually(() => hold.lost, { what: 'the hold reported lost' });
  const pttl = await redis.pttl(name);
  assert.ok(pttl > 0, `Redis still has the key (${pttl} ms left) when the holder gives it up`);
  await drifty.close();
  await redis.del(name);
});

row('node-redlock/release', 'release: a lock taken away meanwhile', async () => {
  const name = fresh();
  const theirs = await v5().acquire([`${name}:v5`], 5000);
  await redis.del(`${name}:v5`);
  await assert.rejects(theirs.release(), ExecutionError);
  const theirs4 = await v4().lock(`${name}:v4`, 5000);
  await redis.del(`${name}:v4`);
  await assert.rejects(theirs4.unlock(), RedlockV4.LockError);
  const hold = await client.lock(name).acquire();
  assert.equal(await other.lock(name).forceUnlock(), true);
  await eventually(() => hold.lost, { what: 'the hold reported lost' });
  await assert.rejects(hold.release(), LockLostError);
});

row('node-redlock/extend', 'extend(5000): node-redlock sets 5 s (a new Lock), ferrolock adds 5 s ({ replace: true } sets)', async () => {
  const name = fresh();
  const first = await v5().acquire([`${name}:v5`], 10000);
  const second = await first.extend(5000);
  assert.notEqual(second, first);
  assert.equal(first.expiration, 0, 'the old Lock is spent');
  let pttl = await redis.pttl(`${name}:v5`);
  assert.ok(pttl > 4000 && pttl <= 5000, `set to 5 s: ${pttl}`);
  await second.release();
  const old4 = await v4().lock(`${name}:v4`, 10000);
  await old4.extend(5000);
  pttl = await redis.pttl(`${name}:v4`);
  assert.ok(pttl > 4000 && pttl <= 5000, `v4 sets it too: ${pttl}`);
  await old4.unlock();
  const hold = await client.lock(name).acquire({ leaseMs: 10000 });
  await hold.extend(5000);
  pttl = await redis.pttl(name);
  assert.ok(pttl > 14000 && pttl <= 15000, `added: ${pttl}`);
  await hold.extend(5000, { replace: true });
  pttl = await redis.pttl(name);
  assert.ok(pttl > 4000 && pttl <= 5000, `replaced: ${pttl}`);
  await hold.release();
});

row('node-redlock/using', 'using(): renewed while the routine runs; the signal aborts when the lock is gone', async () => {
  const name = fresh();
  // node-redlock v5: extends when less than automaticExtensionThreshold (500 ms) is
  // left; once an extension fails past the expiry, signal.error says why.
  const seen = await v5([redis], { ...fast, automaticExtensionThreshold: 500 }).using([`${name}:v5`], 700, async (signal) => {
    let last = await redis.pttl(`${name}:v5`);
    await eventually(async () => {
      const now = await redis.pttl(`${name}:v5`);
      const up = now > last;
      last = now;
      return up;
    }, { what: 'an automatic extension' });
    await redis.del(`${name}:v5`);
    await eventually(() => signal.aborted, { what: 'the abort' });
    return signal.error;
  }).catch((e) => e);
  assert.ok(seen instanceof ExecutionError, `signal.error: ${seen}`);
  // ferrolock: the watchdog renews; the signal aborts with a LockLostError when the hold is lost.
  const lock = client.lock(name);
  const reason = await lock.using(async (signal) => {
    assert.equal(await other.lock(name).forceUnlock(), true);
    await eventually(() => signal.aborted, { what: 'the abort' });
    return signal.reason;
  }, { waitMs: 1000 }).catch((e) => e);
  assert.ok(reason instanceof LockLostError, `signal.reason: ${reason}`);
});

row('node-redlock/automatic-extension-threshold', 'the extension threshold is node-redlock\'s; ferrolock renews every third of watchdogTimeoutMs', async () => {
  assert.equal(v5([redis], {}).settings.automaticExtensionThreshold, 500);
  await assert.rejects(v5().using([fresh()], 550, async () => {}), /at least 100ms greater/);
  const name = fresh();
  const short = await Client.connect(servers[0].url, { watchdogTimeoutMs: 300 });
  await short.lock(name).using(async () => {
    const pttl = await redis.pttl(name);
    assert.ok(pttl > 0 && pttl <= 300, `the watchdog's lease: ${pttl}`);
  });
  await short.close();
});

row('node-redlock/disposer', 'v4 disposer() with Bluebird.using, and lock.using()', async () => {
  const name = fresh();
  const inside = await Bluebird.using(v4().disposer(`${name}:v4`, 5000, () => {}), async () => redis.exists(`${name}:v4`));
  assert.equal(inside, 1);
  assert.equal(await redis.exists(`${name}:v4`), 0, 'released after the routine');
  const ours = await client.lock(name).using(async () => redis.exists(name));
  assert.equal(ours, 1);
  assert.equal(await redis.exists(name), 0);
  const hold = await client.lock(name).acquire();
  await hold[Symbol.asyncDispose](); // what `await using hold = ...` calls at the end of the scope
  assert.equal(await redis.exists(name), 0);
});

row('node-redlock/events', 'redlock.on("error") reports failed requests; ferrolock reports a lost hold per lock', async () => {
  const name = fresh();
  const dead = await startRedis();
  const gone = new Redis(dead.port, '127.0.0.1', { maxRetriesPerRequest: 0, enableOfflineQueue: false, lazyConnect: true, retryStrategy: () => null });
  await gone.connect();
  await dead.stop();
  const theirs = v5([gone], { retryCount: 0 });
  const errors = [];
  theirs.on('error', (e) => errors.push(e));
  await assert.rejects(theirs.acquire([`${name}:v5`], 5000), ExecutionError);
  assert.ok(errors.length >= 1, 'the failed server reported on "error"');
  const lost = [];
  const lock = client.lock(name).on('lost', (e) => lost.push(e));
  await lock.acquire();
  assert.equal(await other.lock(name).forceUnlock(), true);
  await eventually(() => lost.length === 1, { what: 'the lost event' });
  assert.ok(lost[0] instanceof LockLostError);
  await assert.rejects(lock.release(), LockLostError);
  gone.disconnect();
  await redis.del(`${name}:v5`);
});

row('node-redlock/errors', 'ExecutionError (with a ResourceLockedError per server) / LockError against NotAcquiredError', async () => {
  const name = fresh();
  const held = await v5().acquire([name], 5000);
  const err = await v5([redis], { retryCount: 0 }).acquire([name], 5000).catch((e) => e);
  assert.ok(err instanceof ExecutionError);
  const stats = await err.attempts[0]; // each attempt's stats, a promise settled once every vote is in
  const [against] = [...stats.votesAgainst.values()];
  assert.ok(against instanceof ResourceLockedError);
  await held.release();
  const hold = await other.lock(name).acquire();
  const ours = await client.lock(name).acquire({ waitMs: 50 }).catch((e) => e);
  assert.ok(ours instanceof NotAcquiredError);
  assert.equal(ours.code, 'ERR_NOT_ACQUIRED');
  await hold.release();
});

row('node-redlock/expiration', 'lock.expiration (local) against remainingLeaseMs() (asks Redis)', async () => {
  const name = fresh();
  const theirs = await v5().acquire([`${name}:v5`], 5000);
  const left = theirs.expiration - Date.now();
  assert.ok(left > 4000 && left <= 5000, `${left}`);
  await redis.del(`${name}:v5`);
  assert.ok(theirs.expiration > Date.now(), 'node-redlock does not see the key is gone');
  const lock = client.lock(name);
  await lock.acquire({ leaseMs: 5000 });
  const ms = await lock.remainingLeaseMs();
  assert.ok(ms > 4000 && ms <= 5000, `${ms}`);
  await other.lock(name).forceUnlock();
  assert.equal(await lock.remainingLeaseMs(), null, 'free: null');
  await eventually(() => lock.lost, { what: 'the hold reported lost' });
  await assert.rejects(lock.release(), LockLostError);
});

row('node-redlock/keys', 'one name: ferrolock finds node-redlock\'s string, node-redlock sees ferrolock\'s hash as held', async () => {
  const name = fresh();
  const theirs = await v5().acquire([name], 5000);
  await assert.rejects(client.lock(name).tryAcquire(), WrongTypeError);
  await theirs.release();
  const hold = await client.lock(name).acquire();
  await assert.rejects(v5([redis], { retryCount: 0 }).acquire([name], 5000), ExecutionError);
  await hold.release();
});
