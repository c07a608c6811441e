'use strict';
// Lost holds are told: 'lost' event, aborted signals, ERR_LOCK_LOST on release, and a
// process warning when nobody listens.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { EventEmitter, once, getEventListeners } = require('node:events');
const { setImmediate: tick } = require('node:timers/promises');
const { Client, LockLostError } = require('..');
const { within, eventually, useRedis } = require('./helpers');

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
    assert.equal(err.reason, 'the watchdog found its owner field gone (expired, force-unlocked, or the server lost its data)');
    assert.ok(err.message.includes(err.reason));
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
    assert.match(err.reason, /^its lease \(2000 ms\) ran out before it was renewed or released/);
    assert.equal(hold.lost, true);
    await assert.rejects(hold.release(), { code: 'ERR_LOCK_LOST' });
  } finally {
    await a.close();
  }
});

/** Collects ferrolock's lost-hold process warnings until `stop()`. */
function lostWarnings() {
  const seen = [];
  const onWarning = (w) => {
    if (w.code === 'FERROLOCK_LOCK_LOST') seen.push(w);
  };
  process.on('warning', onWarning);
  return { seen, stop: () => process.off('warning', onWarning) };
}

test("a loss nobody listens for is a process warning naming the lock and the reason", async () => {
  const a = await Client.connect(server.url, { watchdogTimeoutMs: 600 });
  const warnings = lostWarnings();
  try {
    const lock = a.lock('lost:unheard');
    const hold = await lock.acquire();
    await redis.del('lost:unheard');
    await eventually(() => warnings.seen.length > 0, { timeoutMs: 3000, what: 'the process warning' });
    const [w] = warnings.seen;
    assert.equal(w.code, 'FERROLOCK_LOCK_LOST');
    assert.equal(w.name, 'FerrolockWarning');
    assert.match(w.message, /lock "lost:unheard" was lost/);
    assert.match(w.message, /owner field gone/, 'the reason');
    assert.match(w.message, /lock\.on\('lost'/, 'how to handle it');
    assert.equal(hold.lost, true);
    assert.equal(warnings.seen.length, 1);
  } finally {
    warnings.stop();
    await a.close();
  }
});

test("no warning when the loss is heard: a 'lost' listener, or an abort listener on the hold's signal", async () => {
  const a = await Client.connect(server.url, { watchdogTimeoutMs: 600 });
  const warnings = lostWarnings();
  try {
    const byEvent = a.lock('lost:heard:event');
    await byEvent.acquire();
    const lost = once(byEvent, 'lost');
    await redis.del('lost:heard:event');
    await within(lost, 3000, "'lost' event");

    const bySignal = a.lock('lost:heard:signal');
    const hold = await bySignal.acquire();
    const aborted = once(hold.signal, 'abort');
    await redis.del('lost:heard:signal');
    await within(aborted, 3000, 'signal abort');

    // emitWarning emits on the next tick: by the next macrotask it would have been seen.
    await tick();
    assert.equal(warnings.seen.length, 0, warnings.seen.map((w) => w.message).join('\n'));
    assert.equal(byEvent.lost && bySignal.lost, true);
  } finally {
    warnings.stop();
    await a.close();
  }
});

test("a lock is an EventEmitter whose listener table is made by its first listener", async () => {
  const a = await Client.connect(server.url);
  try {
    const lock = a.lock('lost:emitter');
    assert.ok(lock instanceof EventEmitter);
    assert.equal(Object.hasOwn(lock, '_events'), false, 'no listener table before a listener');
    assert.equal(lock.listenerCount('lost'), 0);
    assert.deepEqual(lock.eventNames(), []);
    assert.deepEqual(getEventListeners(lock, 'lost'), []);
    assert.equal(lock.emit('lost', 0), false);
    assert.equal(lock.removeListener('lost', () => {}), lock);
    assert.equal(lock.getMaxListeners(), EventEmitter.defaultMaxListeners);
    assert.throws(() => lock.emit('error', new Error('unhandled')), /unhandled/, "an 'error' nobody listens to throws, as on any emitter");

    const seen = [];
    const onLost = (x) => seen.push(`on ${x}`);
    assert.equal(lock.on('lost', onLost), lock);
    lock.once('lost', (x) => seen.push(`once ${x}`));
    lock.prependListener('lost', (x) => seen.push(`first ${x}`));
    assert.equal(lock.listenerCount('lost'), 3);
    assert.deepEqual(lock.eventNames(), ['lost']);
    assert.equal(lock.emit('lost', 1), true);
    lock.off('lost', onLost);
    lock.emit('lost', 2);
    assert.deepEqual(seen, ['first 1', 'on 1', 'once 1', 'first 2']);
    const custom = once(lock, 'custom');
    lock.emit('custom', 3);
    assert.deepEqual(await custom, [3]);
    lock.removeAllListeners();
    assert.equal(lock.listenerCount('lost'), 0);
    lock.setMaxListeners(1);
    assert.equal(lock.getMaxListeners(), 1);

    // A listener added after the acquire, to a lock whose table was emptied, hears the loss.
    const fresh = a.lock('lost:emitter:late');
    const hold = await fresh.acquire({ leaseMs: 300 });
    assert.equal(Object.hasOwn(fresh, '_events'), false);
    const [err] = await within(once(fresh, 'lost'), 5000, "'lost' at the lease end");
    assert.ok(err instanceof LockLostError);
    assert.equal(hold.lost, true);
  } finally {
    await a.close();
  }
});

test("a lock whose loss is still to be told stays routed through a sweep of the client's held locks", async () => {
  const a = await Client.connect(server.url);
  try {
    const lock = a.lock('lost:sweep');
    const heard = [];
    lock.on('lost', (err) => heard.push(err));
    await lock.acquire({ leaseMs: 300 });
    const others = Array.from({ length: 70 }, (_, i) => a.lock(`lost:sweep:${i}`));
    // Polled without yielding to the event loop: the loss is known natively, its
    // event is not delivered yet.
    const deadline = performance.now() + 5000;
    while (!lock.lost) {
      if (performance.now() > deadline) assert.fail('the hold was not lost at the end of its lease');
    }
    // Each acquire enters the client's routed locks at once; the 64th sweeps them.
    const holds = await Promise.all(others.map((l) => l.acquire()));
    await eventually(() => heard.length === 1, { timeoutMs: 5000, what: "the 'lost' event told after the sweep" });
    assert.ok(heard[0] instanceof LockLostError);
    await Promise.all(holds.map((h) => h.release()));
  } finally {
    await a.close();
  }
});
