'use strict';
// Core lock behaviour through the Node API: exclusion, reentrancy, tryAcquire,
// lease expiry, fencing, using / await using, queries.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { setImmediate: tick } = require('node:timers/promises');
const { Client, Hold, Lock, FerrolockError, NotAcquiredError } = require('..');
const { eventually, within, leftoverKeys, useRedis, parked } = require('./helpers');

let server;
let redis;
let client;
useRedis((env) => ({ server, redis, client } = env), { watchdogTimeoutMs: 3000 });

test('8 handles x 100 non-atomic increments under one lock name: exact count', async () => {
  const name = 'count:exact';
  let counter = 0;
  let inside = 0;
  let maxInside = 0;
  const worker = async (lock) => {
    for (let i = 0; i < 100; i++) {
      const hold = await lock.acquire();
      inside++;
      maxInside = Math.max(maxInside, inside);
      const v = counter;
      await tick(); // lets every other waiter run: without exclusion increments get lost
      counter = v + 1;
      inside--;
      await hold.release();
    }
  };
  const locks = Array.from({ length: 8 }, () => client.lock(name));
  await within(Promise.all(locks.map(worker)), 60_000, '800 critical sections');
  assert.equal(counter, 800);
  assert.equal(maxInside, 1);
  assert.equal(await locks[0].isLocked(), false);
  await eventually(() => client.subscribedChannels() === 0, { what: 'unsubscribe' });
});

test('reentrancy on one handle, exclusion between handles', async () => {
  const a = client.lock('reentrant');
  const b = client.lock('reentrant');
  assert.ok(a instanceof Lock);
  const h1 = await a.acquire();
  assert.ok(h1 instanceof Hold);
  assert.equal(h1.holdCount, 1);
  const h2 = await a.acquire();
  assert.equal(h2.holdCount, 2);
  assert.equal(await a.holdCount(), 2);
  assert.equal(await a.isHeld(), true);
  assert.equal(await b.isHeld(), false);
  assert.equal(await b.isLocked(), true);
  assert.equal(await b.tryAcquire(), false);
  await h2.release();
  assert.equal(await a.holdCount(), 1);
  assert.equal(await b.tryAcquire(), false, 'still held once');
  await h2.release(); // a second release of the same hold object does nothing
  assert.equal(await a.holdCount(), 1);
  await h1.release();
  assert.equal(await a.isLocked(), false);
  assert.equal(await b.tryAcquire(), true);
  assert.equal(await a.tryAcquire(), false);
  await b.release();
  // Two handles made from the same client for the same name are different holders.
  assert.notEqual(a.owner, b.owner);
  assert.ok(a.owner.startsWith(`${client.id}:`));
});

test('tryAcquire with waits', async () => {
  const a = client.lock('try');
  const b = client.lock('try');
  assert.equal(await a.tryAcquire({ waitMs: 0 }), true);
  let t0 = performance.now();
  assert.equal(await b.tryAcquire({ waitMs: 150 }), false);
  const waited = performance.now() - t0;
  assert.ok(waited >= 140 && waited < 2000, `waited ${waited} ms`);

  // A release while b waits hands the lock to b well before its bound.
  t0 = performance.now();
  const pending = b.tryAcquire({ waitMs: 10_000 });
  // Parked, not just subscribed: the channel of b's wait above stays subscribed 100 ms after it.
  await eventually(() => parked(client), { what: 'b subscribed' });
  await a.release();
  assert.equal(await pending, true);
  assert.ok(performance.now() - t0 < 5000);
  assert.equal(await b.isHeld(), true);
  await b.release();

  // acquire with waitMs rejects with NotAcquiredError.
  await a.acquire();
  await assert.rejects(b.acquire({ waitMs: 50 }), (e) => e instanceof NotAcquiredError && e.code === 'ERR_NOT_ACQUIRED');
  await a.release();
});

test('lease expiry: an explicit lease ends the hold without release', async () => {
  const a = client.lock('lease');
  const b = client.lock('lease');
  const t0 = performance.now();
  const hold = await a.acquire({ leaseMs: 300 });
  const left = await a.remainingLeaseMs();
  assert.ok(left > 0 && left <= 300, `remaining ${left}`);
  const lost = new Promise((resolve) => a.once('lost', resolve));
  const hb = await within(b.acquire(), 5000, 'acquire after expiry'); // no publish on expiry: woken by the TTL
  const waited = performance.now() - t0;
  assert.ok(waited >= 250 && waited < 3000, `b waited ${waited} ms`);
  const err = await within(lost, 3000, 'lost event of the expired hold');
  assert.equal(err.code, 'ERR_LOCK_LOST');
  assert.equal(hold.lost, true);
  assert.equal(a.lost, true);
  await assert.rejects(hold.release(), { code: 'ERR_LOCK_LOST' });
  await hb.release();
  assert.equal(await a.remainingLeaseMs(), null);
});

test('watchdog keeps a hold past its lease', async () => {
  const c = await Client.connect(server.url, { watchdogTimeoutMs: 300 });
  try {
    const a = c.lock('watchdog');
    const hold = await a.acquire();
    // Wait until well past one lease, synchronising on the renewals themselves.
    const t0 = Date.now();
    await eventually(async () => Date.now() - t0 > 700 && (await a.remainingLeaseMs()) > 0, { what: '700 ms of renewals' });
    assert.equal(hold.lost, false);
    assert.equal(await a.isHeld(), true);
    await hold.release();
  } finally {
    await c.close();
  }
});

test('fenced tokens increase across holders and clients', async () => {
  const other = await Client.connect(server.url);
  try {
    const locks = [client.fencedLock('fenced'), other.fencedLock('fenced'), client.fencedLock('fenced')];
    let last = 0n;
    for (let round = 0; round < 3; round++) {
      for (const lock of locks) {
        assert.equal(lock.token, null);
        const hold = await lock.acquire();
        assert.equal(typeof hold.token, 'bigint');
        assert.ok(hold.token > last, `${hold.token} > ${last}`);
        assert.equal(lock.token, hold.token);
        last = hold.token;
        await hold.release();
      }
    }
    assert.equal(client.lock('plain').token, null);
  } finally {
    await other.close();
  }
});

test('kind: reentrant from lock(), fenced from fencedLock(), read-only', () => {
  const plain = client.lock('kind');
  const fenced = client.fencedLock('kind');
  assert.equal(plain.kind, 'reentrant');
  assert.equal(plain.fenced, false);
  assert.equal(fenced.kind, 'fenced');
  assert.equal(fenced.fenced, true);
  assert.throws(() => {
    'use strict';
    plain.kind = 'fenced';
  }, TypeError);
  assert.equal(plain.kind, 'reentrant');
});

test('using() releases on success and on throw', async () => {
  const a = client.lock('using');
  const r = await a.using(async (signal, hold) => {
    assert.equal(signal.aborted, false);
    assert.ok(hold instanceof Hold);
    assert.equal(await a.isHeld(), true);
    return 42;
  });
  assert.equal(r, 42);
  assert.equal(await a.isLocked(), false);
  const boom = new Error('boom');
  await assert.rejects(a.using(async () => {
    assert.equal(await a.isHeld(), true);
    throw boom;
  }), (e) => e === boom);
  assert.equal(await a.isLocked(), false);
  // Bounded wait in using().
  const b = client.lock('using');
  await b.acquire();
  await assert.rejects(a.using(() => 1, { waitMs: 30 }), { code: 'ERR_NOT_ACQUIRED' });
  await b.release();
});

test('await using: Symbol.asyncDispose releases the hold', async () => {
  assert.equal(typeof Symbol.asyncDispose, 'symbol');
  const a = client.lock('dispose');
  const hold = await a.acquire();
  assert.equal(typeof hold[Symbol.asyncDispose], 'function');
  assert.equal(await a.isHeld(), true);
  // What `{ await using held = await lock.acquire(); }` runs at the end of the block:
  await hold[Symbol.asyncDispose]();
  assert.equal(hold.released, true);
  assert.equal(await a.isLocked(), false);
  // Disposing a hold released explicitly does nothing (no NotOwner, no extra level).
  const h1 = await a.acquire();
  const h2 = await a.acquire();
  await h2.release();
  await h2[Symbol.asyncDispose]();
  assert.equal(await a.holdCount(), 1);
  await h1[Symbol.asyncDispose]();
  assert.equal(await a.isLocked(), false);
});

test('queries and forceUnlock', async () => {
  const a = client.lock('queries');
  assert.equal(await a.isLocked(), false);
  assert.equal(await a.remainingLeaseMs(), null);
  assert.equal(await a.forceUnlock(), false);
  await a.acquire();
  const left = await a.remainingLeaseMs();
  assert.ok(left > 2000 && left <= 3000, `remaining ${left}`);
  assert.equal(await a.forceUnlock(), true);
  assert.equal(await a.isLocked(), false);
  // Binary names work too.
  const bin = client.lock(new Uint8Array([0xff, 0x00, 0x41]));
  await bin.acquire();
  assert.equal(await redis.exists(Buffer.from([0xff, 0x00, 0x41])), 1);
  await bin.release();
});

test('no leaked keys or subscriptions after all of the above', async () => {
  await client.close();
  client = await Client.connect(server.url);
  await eventually(async () => (await redis.pubsub('NUMSUB', 'redisson_lock__channel:{count:exact}'))[1] === 0, {
    what: 'no subscriber left',
  });
  assert.deepEqual(await leftoverKeys(redis), []);
  assert.ok(new FerrolockError('x', 'ERR_INTERNAL') instanceof Error);
});
