'use strict';
// Lost holds are told: 'lost' event, aborted signals, ERR_LOCK_LOST on release.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { once } = require('node:events');
const { Client, LockLostError } = require('..');
const { within, useRedis } = require('./helpers');

let server;
let redis;
useRedis((env) => ({ server, redis } = env), false);

test("another client's forceUnlock: 'lost' event, signals aborted, release rejects", async () => {
  // Short watchdog: renewal every 200 ms finds the owner field gone.
  const a = await Client.connect(server.url, { watchdogTimeoutMs: 600 });
  const b = await Client.connect(server.url);
  try {
    const lock = a.lock('lost:force');
    const signalBefore = lock.signal; // the next hold's signal
    const hold = await lock.acquire();
    assert.equal(lock.signal, hold.signal);
    assert.equal(signalBefore, hold.signal);
    assert.equal(hold.signal.aborted, false);
    assert.equal(lock.lost, false);
    let aborted = 0;
    hold.signal.addEventListener('abort', () => aborted++);
    const lostEvent = once(lock, 'lost');

    assert.equal(await b.lock('lost:force').forceUnlock(), true);
    const [err] = await within(lostEvent, 3000, "'lost' event");
    assert.ok(err instanceof LockLostError);
    assert.equal(err.code, 'ERR_LOCK_LOST');
    assert.match(err.message, /lost:force/);
    assert.equal(hold.lost, true);
    assert.equal(hold.signal.aborted, true);
    assert.equal(hold.signal.reason, err);
    assert.equal(aborted, 1);
    assert.equal(lock.lost, true);
    await assert.rejects(hold.release(), (e) => e instanceof LockLostError && e.code === 'ERR_LOCK_LOST');

    // A new hold gets a fresh signal; the lost flag clears.
    const again = await lock.acquire();
    assert.equal(again.signal.aborted, false);
    assert.notEqual(again.signal, hold.signal);
    assert.equal(lock.lost, false);
    await again.release();
    assert.equal(again.signal.aborted, false, 'a release is not a loss');
  } finally {
    await a.close();
    await b.close();
  }
});

test('using(): the signal aborts when the hold is lost, and using rejects with ERR_LOCK_LOST', async () => {
  const a = await Client.connect(server.url, { watchdogTimeoutMs: 600 });
  try {
    const lock = a.lock('lost:using');
    const run = lock.using(async (signal) => {
      await redis.del('lost:using'); // the lock disappears behind the holder's back
      await within(once(signal, 'abort'), 3000, 'signal abort');
      assert.ok(signal.reason instanceof LockLostError);
      return 'done';
    });
    await assert.rejects(run, { code: 'ERR_LOCK_LOST' });
  } finally {
    await a.close();
  }
});

test('reentrant levels each report the loss', async () => {
  const a = await Client.connect(server.url, { watchdogTimeoutMs: 600 });
  try {
    const lock = a.lock('lost:levels');
    const h1 = await lock.acquire();
    const h2 = await lock.acquire();
    const lost = once(lock, 'lost');
    await redis.del('lost:levels');
    await within(lost, 3000, "'lost' event");
    assert.equal(h1.lost && h2.lost, true);
    await assert.rejects(h2.release(), { code: 'ERR_LOCK_LOST' });
    await assert.rejects(h1.release(), { code: 'ERR_LOCK_LOST' });
    await assert.rejects(lock.release(), { code: 'ERR_NOT_OWNER' });
  } finally {
    await a.close();
  }
});

test('driftFactor: the end of an explicit lease is told lease x driftFactor + 2 ms before Redis expires it', async () => {
  const a = await Client.connect(server.url, { driftFactor: 0.5 });
  try {
    const lock = a.lock('lost:drift');
    const lost = once(lock, 'lost');
    const t0 = performance.now();
    const hold = await lock.acquire({ leaseMs: 2000 });
    const [err] = await within(lost, 5000, "'lost' at the local deadline");
    const elapsed = performance.now() - t0;
    // Redis still has it: the holder stopped counting on it ~1000 ms before the expiry.
    const pttl = await redis.pttl('lost:drift');
    assert.ok(pttl > 0, `the key is still there when the loss is told (pttl ${pttl})`);
    assert.ok(elapsed >= 990 && elapsed < 2000, `told ${elapsed} ms after the acquire`);
    assert.ok(err instanceof LockLostError);
    assert.equal(hold.lost, true);
    await assert.rejects(hold.release(), { code: 'ERR_LOCK_LOST' });
  } finally {
    await a.close();
  }
});
