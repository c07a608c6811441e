'use strict';
// The permit-expirable semaphore (Redisson's RPermitExpirableSemaphore) through the
// Node API: permits with ids and leases, an expired permit coming back by itself,
// limits under contention, wake-up by message, aborted waits, every error.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { setTimeout: delay } = require('node:timers/promises');
const { inspect } = require('node:util');
const {
  Client, PermitExpirableSemaphore, Permit, NotAcquiredError, WrongTypeError, ClientClosedError, ArgumentTypeError,
  InvalidArgumentError, CancelledError,
} = require('..');
const { eventually, within, useRedis, parked } = require('./helpers');

let server;
let redis;
let client;
useRedis((env) => ({ server, redis, client } = env));

const isAbort = (e) => e instanceof CancelledError && e.name === 'AbortError' && e.code === 'ERR_CANCELLED';

test('every verb: trySetPermits, acquire (waitMs, leaseMs), release (permit, id, from another client), available', async () => {
  const ps = client.permitExpirableSemaphore('permits:verbs');
  assert.ok(ps instanceof PermitExpirableSemaphore);
  assert.equal(ps.name, 'permits:verbs');
  assert.equal(await ps.trySetPermits(2), true);
  assert.equal(await ps.trySetPermits(9), false);
  assert.equal(await ps.available(), 2);

  const a = await ps.acquire();
  assert.ok(a instanceof Permit);
  assert.match(a.id, /^[0-9a-f]{32}$/);
  assert.equal(a.leaseMs, null);
  assert.equal(a.semaphore, ps);
  const b = await ps.acquire({ waitMs: 0, leaseMs: 60_000 });
  assert.equal(b.leaseMs, 60_000);
  assert.notEqual(a.id, b.id);
  assert.equal(await redis.zcard('{permits:verbs}:timeout'), 2, "Redisson's zset of permits out");
  assert.equal(await ps.available(), 0);
  const t0 = performance.now();
  assert.equal(await ps.acquire({ waitMs: 100 }), null);
  assert.ok(performance.now() - t0 >= 90);
  assert.match(inspect(a), new RegExp(`Permit \\{\\s+semaphore: 'permits:verbs',\\s+id: '${a.id}'`));

  assert.equal(await a.release(), true);
  assert.equal(a.released, true);
  assert.equal(await a.release(), false, 'a second release finds nothing out');
  assert.equal(await ps.release(a.id), false, 'nor does a release by its id');
  // Permits are nobody's: another client releases b by its id alone.
  const c2 = await Client.connect(server.url);
  try {
    assert.equal(await c2.permitExpirableSemaphore('permits:verbs').release(b.id), true);
  } finally {
    await c2.close();
  }
  assert.equal(await ps.available(), 2);
  const c = await ps.acquire();
  assert.equal(await ps.release(c), true, 'release(permit) releases that permit');
  assert.equal(c.released, true);
  await (await ps.acquire())[Symbol.asyncDispose]();
  assert.equal(await ps.available(), 2);

  // using(): holds a permit while fn runs, releases it however it ends.
  assert.equal(await ps.using(async (p) => { assert.equal(await ps.available(), 1); return p.id.length; }, { leaseMs: 10_000 }), 32);
  await assert.rejects(ps.using(() => { throw new Error('boom'); }), /boom/);
  assert.equal(await ps.available(), 2);
  const x = await ps.acquire();
  const y = await ps.acquire();
  await assert.rejects(ps.using(() => assert.fail('must not run'), { waitMs: 30 }), NotAcquiredError);
  await x.release();
  await y.release();
  assert.equal(await redis.zcard('{permits:verbs}:timeout'), 0);
});

test('an expiring permit comes back by itself and wakes a waiter by its expiry', async () => {
  const ps = client.permitExpirableSemaphore('permits:expiry');
  await ps.trySetPermits(1);
  const t0 = performance.now();
  const leased = await ps.acquire({ leaseMs: 400 });
  const c2 = await Client.connect(server.url);
  try {
    // Nobody releases: the waiter wakes at the lease's end, far before its own 30 s bound.
    const next = await within(c2.permitExpirableSemaphore('permits:expiry').acquire({ waitMs: 30_000 }), 10_000, 'woken by the expiry');
    const waited = performance.now() - t0;
    assert.ok(next, 'the expired permit came back');
    assert.ok(waited >= 350, `got it after ${waited} ms, before the 400 ms lease ended`);
    assert.ok(waited < 5000, `got it after ${waited} ms`);
    assert.equal(await leased.release(), false, 'released too late: it had come back already');
    assert.equal(await next.release(), true);
    assert.equal(await ps.available(), 1);
  } finally {
    await c2.close();
  }
});

test('at most N inside under contention, and a waiter woken by the release message', async () => {
  const name = 'permits:limit';
  const c2 = await Client.connect(server.url);
  try {
    assert.equal(await client.permitExpirableSemaphore(name).trySetPermits(2), true);
    let inside = 0;
    let maxInside = 0;
    let sections = 0;
    const worker = async (ps) => {
      for (let i = 0; i < 10; i++) {
        const permit = await ps.acquire({ leaseMs: 30_000 });
        inside++;
        maxInside = Math.max(maxInside, inside);
        await delay(2);
        inside--;
        sections++;
        assert.equal(await permit.release(), true);
      }
    };
    const sems = Array.from({ length: 6 }, (_, i) => (i % 2 ? c2 : client).permitExpirableSemaphore(name));
    await within(Promise.all(sems.map(worker)), 60_000, '60 sections');
    assert.equal(sections, 60);
    assert.ok(maxInside <= 2, `${maxInside} inside at once`);
    assert.equal(await sems[0].available(), 2);

    // Wake-up by message: the permit has a 30 s lease; the release wakes the waiter.
    const holder = await sems[0].acquire({ leaseMs: 30_000 });
    const other = await sems[0].acquire({ leaseMs: 30_000 });
    const waiting = sems[1].acquire({ waitMs: 30_000 });
    // Parked, not just subscribed: c2's channel stays subscribed 100 ms after the
    // workers' last wait on it.
    await eventually(() => parked(c2), { what: 'the waiter subscribed' });
    const t0 = performance.now();
    await holder.release();
    const permit = await within(waiting, 5000, 'the waiter woken');
    assert.ok(performance.now() - t0 < 3000, 'woken by the message, not the 30 s lease');
    await permit.release();
    await other.release();
  } finally {
    await c2.close();
  }
});

test('an aborted wait takes nothing, even when the abort races a release', async () => {
  const ps = client.permitExpirableSemaphore('permits:abort');
  await ps.trySetPermits(1);
  await assert.rejects(ps.acquire({ signal: AbortSignal.abort() }), isAbort);
  assert.equal(await ps.available(), 1);
  const held = await ps.acquire();
  const ac = new AbortController();
  const pending = ps.acquire({ signal: ac.signal, leaseMs: 60_000 });
  // Parked, not just subscribed: a channel of the test before may still be subscribed
  // (100 ms after its last waiter left) and count for this one.
  await eventually(() => parked(client), { what: 'waiter subscribed' });
  ac.abort();
  await assert.rejects(within(pending, 3000, 'aborted wait'), (e) => isAbort(e) && /permit-expirable semaphore "permits:abort".*nothing was taken/.test(e.message));
  await eventually(() => client.subscribedChannels() === 0, { what: 'unsubscribed' });
  await held.release();
  assert.equal(await ps.available(), 1, 'the aborted waiter took nothing');

  for (let i = 0; i < 20; i++) {
    const hold = await ps.acquire();
    const abort = new AbortController();
    const wait = ps.acquire({ signal: abort.signal }).then((p) => p, (e) => (isAbort(e) ? null : Promise.reject(e)));
    // Parked: the round before's subscription outlives its waiter by 100 ms.
    await eventually(() => parked(client), { what: 'waiter subscribed' });
    const released = hold.release();
    abort.abort();
    await released;
    const got = await within(wait, 5000, 'the racing wait');
    if (got) await got.release();
    await eventually(async () => (await ps.available()) === 1, { what: `round ${i}: the permit back` });
  }
  assert.equal(await redis.zcard('{permits:abort}:timeout'), 0, 'no permit left out');
});

test('errors from real causes: bad options, ids and leases, ERR_WRONG_TYPE, a closed client', async () => {
  const ps = client.permitExpirableSemaphore('permits:errors');
  await ps.trySetPermits(1);
  const typeErr = (pattern) => (e) => e instanceof ArgumentTypeError && pattern.test(e.message);
  const rangeErr = (pattern) => (e) => e instanceof InvalidArgumentError && !(e instanceof TypeError) && pattern.test(e.message);
  await assert.rejects(ps.acquire({ permits: 1 }), typeErr(/permitExpirableSemaphore\.acquire options: unknown option "permits"; valid options: leaseMs, signal, waitMs$/));
  await assert.rejects(ps.acquire({ ttl: 5 }), typeErr(/did you mean leaseMs/));
  await assert.rejects(ps.using(() => 1, { lease: 5 }), typeErr(/permitExpirableSemaphore\.using options/));
  await assert.rejects(ps.acquire({ leaseMs: '5' }), typeErr(/leaseMs must be a number/));
  await assert.rejects(ps.acquire({ leaseMs: 0 }), rangeErr(/lease/));
  await assert.rejects(ps.acquire({ leaseMs: 8 * 24 * 3600 * 1000 }), rangeErr(/lease/));
  await assert.rejects(ps.acquire({ waitMs: -1 }), rangeErr(/waitMs/));
  await assert.rejects(ps.release('not-an-id'), rangeErr(/permit id "not-an-id" is not 32 hex digits/));
  await assert.rejects(ps.release('z'.repeat(32)), rangeErr(/not 32 hex digits/));
  await assert.rejects(ps.release(42), typeErr(/release\(\) needs a Permit or a permit id \(string\), not number/));
  await assert.rejects(ps.trySetPermits('1'), typeErr(/permits must be a number/));
  await assert.rejects(ps.trySetPermits(1.25), rangeErr(/whole number/));
  assert.throws(() => client.permitExpirableSemaphore(''), rangeErr(/name is empty/));
  assert.throws(() => client.permitExpirableSemaphore(null), typeErr(/a permit-expirable semaphore name must be a string/));
  assert.equal(await ps.available(), 1, 'no refused call took anything');

  await redis.hset('permits:hash', 'f', '1');
  const isWrongType = (e) => e instanceof WrongTypeError && e.code === 'ERR_WRONG_TYPE';
  await assert.rejects(client.permitExpirableSemaphore('permits:hash').acquire({ waitMs: 0 }), isWrongType);
  await assert.rejects(client.permitExpirableSemaphore('permits:hash').available(), isWrongType);
  await redis.del('permits:hash');

  const c = await Client.connect(server.url);
  const mine = c.permitExpirableSemaphore('permits:errors');
  const held = await ps.acquire();
  const waiting = mine.acquire().then(() => 'acquired', (e) => e);
  await eventually(() => c.subscribedChannels() === 1, { what: 'waiter subscribed' });
  await c.close();
  const ended = await within(waiting, 3000, 'the wait stopped by close');
  assert.ok(ended instanceof ClientClosedError, `ended with ${ended}`);
  assert.throws(() => c.permitExpirableSemaphore('permits:errors'), ClientClosedError);
  await assert.rejects(mine.acquire({ waitMs: 0 }), ClientClosedError);
  await assert.rejects(mine.release(held.id), ClientClosedError);
  await assert.rejects(mine.available(), ClientClosedError);
  await assert.rejects(mine.trySetPermits(1), ClientClosedError);
  assert.equal(await held.release(), true);
  assert.equal(await ps.available(), 1, 'the closed waiter took nothing');
});
