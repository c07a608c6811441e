'use strict';
// The fair lock and the read-write lock: Locks like client.lock's (one class, the
// kind being data), with their own rules: grants in arrival order across clients;
// many readers or one writer, the writer's own read holds aside.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { Client, Lock, Hold, ReadWriteLock, NotAcquiredError, FerrolockError, WrongTypeError, ClientClosedError, ArgumentTypeError } = require('..');
const { eventually, within, useRedis, parked } = require('./helpers');

let server;
let redis;
let client;
useRedis((env) => ({ server, redis, client } = env), { watchdogTimeoutMs: 30000 });

async function numsub(channel) {
  return (await redis.pubsub('NUMSUB', channel))[1];
}

test('a fair lock is a Lock: acquire, re-enter, tryAcquire, using, await using, status, release', async () => {
  const a = client.fairLock('kinds:fair:api');
  const b = client.fairLock('kinds:fair:api');
  assert.ok(a instanceof Lock);
  assert.equal(a.kind, 'fair');
  assert.equal(a.fenced, false);
  const h1 = await a.acquire();
  assert.ok(h1 instanceof Hold);
  assert.equal(h1.token, null);
  assert.equal((await a.acquire()).holdCount, 2, 're-entry by the same holder');
  assert.equal(await a.holdCount(), 2);
  assert.equal(await b.tryAcquire({ waitMs: 50 }), false);
  await assert.rejects(b.acquire({ waitMs: 50 }), NotAcquiredError);
  const s = await a.status();
  assert.deepEqual(s.holders.map((h) => [h.owner, h.count]), [[a.owner, 2]]);
  await a.releaseAll();
  assert.equal(await a.isLocked(), false);
  assert.equal(await b.using(async (signal, hold) => hold.lock.kind + (signal.aborted ? '!' : ''), { waitMs: 1000 }), 'fair');
  const held = await b.acquire({ leaseMs: 10_000 });
  assert.ok((await b.remainingLeaseMs()) <= 10_000);
  await held[Symbol.asyncDispose]();
  assert.equal(await b.isLocked(), false);
  // Bounded waits that ran out left the queue (Redisson's list of waiters).
  assert.equal(await redis.llen('redisson_lock_queue:{kinds:fair:api}'), 0);
});

test('fair lock: grants follow arrival order across 3 clients, each woken by a message', async () => {
  const name = 'kinds:fair:fifo';
  const queue = `redisson_lock_queue:{${name}}`;
  const holder = client.fairLock(name);
  await holder.acquire();
  const others = [];
  try {
    const order = [];
    const waits = [];
    for (let i = 0; i < 3; i++) {
      const c = await Client.connect(server.url);
      others.push(c);
      const lock = c.fairLock(name);
      waits.push(lock.acquire({ waitMs: 30_000 }).then(async (hold) => {
        order.push(i);
        await hold.release();
      }));
      // Each arrives once the one before is in line.
      await eventually(async () => (await redis.llen(queue)) === i + 1, { what: `${i + 1} in line` });
    }
    const t0 = performance.now();
    await holder.release();
    await within(Promise.all(waits), 10_000, 'every waiter had its turn');
    const took = performance.now() - t0;
    assert.deepEqual(order, [0, 1, 2], 'grant order = arrival order');
    // Three hand-offs by message, far below the 30 s watchdog lease and the 30 s waits.
    assert.ok(took < 5000, `three turns took ${took} ms`);
    assert.equal(await redis.llen(queue), 0);
  } finally {
    await Promise.all(others.map((c) => c.close()));
  }
});

test('read-write lock: readers together, a writer alone, on Locks of the same API', async () => {
  const name = 'kinds:rw';
  const rw1 = client.readWriteLock(name);
  const c2 = await Client.connect(server.url);
  try {
    const rw2 = c2.readWriteLock(name);
    assert.ok(rw1 instanceof ReadWriteLock);
    assert.equal(rw1.name, name);
    const [r1, w1, r2, w2] = [rw1.readLock(), rw1.writeLock(), rw2.readLock(), rw2.writeLock()];
    assert.equal(rw1.readLock(), r1, 'one Lock object per side');
    assert.ok(r1 instanceof Lock && w1 instanceof Lock);
    assert.equal(r1.kind, 'read');
    assert.equal(w1.kind, 'write');

    // Two readers of two clients at once; no writer meanwhile.
    await r1.acquire();
    assert.equal(await r2.tryAcquire(), true, 'readers hold together');
    const s = await r1.status();
    assert.equal(s.holders.length, 2);
    assert.equal(await w2.tryAcquire({ waitMs: 50 }), false, 'no writer while others read');

    // The writer waits for the last reader and is woken by its release.
    const writing = w2.acquire({ waitMs: 30_000 });
    // Parked, not just subscribed: the subscription of the bounded wait above outlives
    // it by 100 ms, so the channel alone does not tell that the writer waits yet.
    await eventually(() => parked(c2), { what: 'the writer waits' });
    await r2.release();
    assert.equal(await w2.isHeld(), false, 'one reader still holds');
    const t0 = performance.now();
    await r1.release();
    const hold = await within(writing, 5000, 'the writer woken');
    assert.ok(performance.now() - t0 < 3000, 'woken by the message, not a lease');

    // A writer alone: no reader of another holder, no second writer.
    assert.equal(await r1.tryAcquire({ waitMs: 50 }), false);
    assert.equal(await w1.tryAcquire(), false);
    // The writer's own holder may read too, and keep reading after it stops writing.
    assert.equal(await r2.tryAcquire(), true);
    await hold.release();
    assert.equal(await r2.isHeld(), true);
    assert.equal(await r1.tryAcquire(), true, 'downgraded: others read along');
    assert.equal(await w1.tryAcquire(), false, 'but nobody writes');
    await r1.release();
    await r2.release();
    assert.equal(await w1.tryAcquire(), true);
    await w1.release();
    assert.equal(await r1.isLocked(), false);
  } finally {
    await c2.close();
  }
});

test('read-write lock: both sides on one holder; holderId / owner pick it; options are strict', async () => {
  const rw = client.readWriteLock('kinds:rw:holder', { holderId: 77 });
  assert.equal(rw.readLock().owner, `${client.id}:77`);
  assert.equal(rw.writeLock().owner, `${client.id}:77`);
  const fresh = client.readWriteLock('kinds:rw:holder');
  assert.equal(fresh.readLock().owner, fresh.writeLock().owner);
  assert.notEqual(fresh.readLock().owner, rw.readLock().owner, 'each readWriteLock() is a new holder');
  const handed = client.readWriteLock('kinds:rw:holder', { owner: 'elsewhere:9' });
  assert.equal(handed.writeLock().owner, 'elsewhere:9');
  assert.throws(() => client.readWriteLock('kinds:rw:holder', { holder: 1 }), (e) => e instanceof ArgumentTypeError && /valid options: holderId, label, owner$/.test(e.message));
  assert.throws(() => client.readWriteLock(42), ArgumentTypeError);
  assert.throws(() => client.readWriteLock(''), (e) => e instanceof FerrolockError && e.code === 'ERR_INVALID_ARGUMENT');
  assert.throws(() => client.fairLock('x', { holderId: -1 }), (e) => e.code === 'ERR_INVALID_ARGUMENT');
});

test('ERR_WRONG_TYPE: a fair or read-write lock on a key of another type', async () => {
  await redis.set('kinds:wrong', 'a string');
  const isWrongType = (e) => e instanceof WrongTypeError && e.code === 'ERR_WRONG_TYPE';
  await assert.rejects(client.fairLock('kinds:wrong').acquire(), isWrongType);
  await assert.rejects(client.readWriteLock('kinds:wrong').readLock().tryAcquire(), isWrongType);
  await assert.rejects(client.readWriteLock('kinds:wrong').writeLock().acquire({ waitMs: 100 }), isWrongType);
  assert.equal(await redis.get('kinds:wrong'), 'a string');
  await redis.del('kinds:wrong');
});

test('a fair waiter aborted in line leaves the line; a closed client refuses the kinds', async () => {
  const name = 'kinds:fair:abort';
  const holder = client.fairLock(name);
  await holder.acquire();
  const waiter = client.fairLock(name);
  const ac = new AbortController();
  const pending = waiter.acquire({ signal: ac.signal });
  await eventually(async () => (await redis.llen(`redisson_lock_queue:{${name}}`)) === 1, { what: 'the waiter in line' });
  ac.abort();
  await assert.rejects(within(pending, 3000, 'aborted wait'), (e) => e.name === 'AbortError' && e.code === 'ERR_CANCELLED');
  await eventually(async () => (await redis.llen(`redisson_lock_queue:{${name}}`)) === 0, { what: 'the line empty' });
  assert.equal(await waiter.isHeld(), false);
  await holder.release();
  assert.equal(await holder.isLocked(), false, 'the aborted waiter took nothing');
  await eventually(async () => (await numsub(`redisson_lock__channel:{${name}}:${waiter.owner}`)) === 0, { what: 'unsubscribed' });

  const c = await Client.connect(server.url);
  const rw = c.readWriteLock('kinds:closed');
  const fair = c.fairLock('kinds:closed:fair');
  await c.close();
  assert.throws(() => c.fairLock('kinds:closed'), ClientClosedError);
  assert.throws(() => c.readWriteLock('kinds:closed'), ClientClosedError);
  await assert.rejects(rw.readLock().acquire(), ClientClosedError);
  await assert.rejects(rw.writeLock().tryAcquire(), ClientClosedError);
  await assert.rejects(fair.acquire(), ClientClosedError);
});
