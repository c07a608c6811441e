'use strict';
// Multi-locks over independent servers: Redlock (majority) and MultiLock (all),
// each test on redis-servers it starts itself (those that kill servers start their own).

const fs = require('node:fs');
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { once } = require('node:events');
const {
  Client, Lock, Redlock, redlock, multiLock,
  InvalidArgumentError, ConnectionError, LockLostError, NotOwnerError, CancelledError, NotAcquiredError,
} = require('..');
const { startRedis, eventually, within, raw, leftoverKeys } = require('./helpers');

// Fail fast on a dead server: connection refused is immediate, but bound the rest too.
const FAST = { connectTimeoutMs: 500, responseTimeoutMs: 500, retryWindowMs: 500 };

/** `n` fresh redis-servers, a raw connection to each, and a stop for all. */
async function servers(n) {
  const started = [];
  try {
    for (let i = 0; i < n; i++) started.push(await startRedis());
  } catch (e) {
    await Promise.all(started.map((s) => s.stop()));
    throw e;
  }
  const raws = started.map(raw);
  return {
    servers: started,
    raws,
    urls: started.map((s) => s.url),
    /** Kills server `i` (SIGKILL), after closing its raw connection. */
    async kill(i) {
      raws[i].disconnect();
      await started[i].stop();
    },
    async stop() {
      for (const r of raws) r.disconnect();
      await Promise.all(started.map((s) => s.stop()));
    },
  };
}

/**
 * Lock keys on each of `raws` (fencing counters aside, and the reply latches a
 * release leaves for its retries, which the client deletes in the background).
 */
async function keysOn(raws) {
  const keys = await Promise.all(raws.map((r) => leftoverKeys(r)));
  return keys.map((k) => k.filter((key) => !key.startsWith('redisson_unlock_latch:')));
}

// Three servers shared by the tests that kill none.
let shared;
before(async () => {
  shared = await servers(3);
});
after(async () => {
  await shared?.stop();
});

test('bad input: typed errors', async () => {
  const a = await Client.connect(shared.urls[0]);
  const b = await Client.connect(shared.urls[1]);
  try {
    const la = a.lock('rl:bad');
    const lb = b.lock('rl:bad');
    const isInvalid = (e) => e instanceof InvalidArgumentError && e.code === 'ERR_INVALID_ARGUMENT';
    assert.throws(() => Lock.multi([], { quorum: 'majority' }), isInvalid);
    assert.throws(() => redlock([]), /at least one member/);
    assert.throws(() => redlock('rl:bad'), isInvalid);
    assert.throws(() => redlock(undefined), isInvalid);
    assert.throws(() => redlock([la, { name: 'rl:bad' }]), (e) => isInvalid(e) && /member 2 .*not a Lock/.test(e.message));
    assert.throws(() => redlock([la, la]), (e) => isInvalid(e) && /same Lock object/.test(e.message));
    // Two handles on one name on one client: core refuses it (it would be one server twice).
    assert.throws(() => multiLock([la, a.lock('rl:bad')]), (e) => isInvalid(e) && /member twice on the same client/.test(e.message));
    assert.throws(() => Lock.multi([la, lb]), (e) => isInvalid(e) && /quorum/.test(e.message));
    assert.throws(() => Lock.multi([la, lb], { quorum: 'most' }), isInvalid);
    assert.throws(() => redlock([redlock([la, lb])]), (e) => isInvalid(e) && /itself a multi-lock/.test(e.message));

    await assert.rejects(Redlock.connect([]), isInvalid);
    await assert.rejects(Redlock.connect('redis://127.0.0.1:1'), isInvalid);
    await assert.rejects(Redlock.connect([shared.urls[0], shared.urls[0]]), (e) => isInvalid(e) && /same as URL 1/.test(e.message));
    await assert.rejects(Redlock.connect(shared.urls, { quorum: 'some' }), isInvalid);
    await assert.rejects(Redlock.connect([shared.urls[0], 42]), isInvalid);
    // One server down at connect: rejects (and closes the clients that did connect).
    const down = await startRedis();
    await down.stop();
    await assert.rejects(Redlock.connect([shared.urls[0], down.url], FAST), ConnectionError);
    assert.throws(() => new Redlock(), isInvalid);
  } finally {
    await a.close();
    await b.close();
  }
});

test('a multi-lock is a Lock: members, quorum, no token, re-entry, using(), await using', async () => {
  const rl = await Redlock.connect(shared.urls);
  try {
    assert.equal(rl.clients.length, 3);
    assert.equal(rl.quorum, 'majority');
    const lock = rl.lock('rl:shape');
    assert.ok(lock instanceof Lock);
    assert.equal(lock.quorum, 'majority');
    assert.equal(lock.members.length, 3);
    assert.ok(lock.members.every((m) => m instanceof Lock && m.name === 'rl:shape' && m.quorum === null && m.members.length === 0));
    assert.ok(Object.isFrozen(lock.members));
    assert.equal(lock.token, null);
    assert.equal(lock.fenced, false);
    assert.equal(lock.kind, 'reentrant');
    await assert.rejects(lock.isLocked(), InvalidArgumentError);
    await assert.rejects(lock.forceUnlock(), InvalidArgumentError);

    const h1 = await lock.acquire();
    assert.equal(h1.token, null);
    assert.equal(h1.holdCount, 1);
    const h2 = await lock.acquire(); // re-entry
    assert.equal(h2.holdCount, 2);
    assert.equal(h2.signal, h1.signal);
    // Every member holds, on its own server, with the hold count of the multi-lock.
    for (const m of lock.members) assert.equal(await m.holdCount(), 2);
    await h2.release();
    await h1.release();
    assert.deepEqual(await keysOn(shared.raws), [[], [], []]);
    await assert.rejects(lock.release(), (e) => e instanceof NotOwnerError && /redlock/.test(e.message));

    const result = await lock.using(async (signal, hold) => {
      assert.equal(signal.aborted, false);
      assert.equal(hold.lock, lock);
      assert.deepEqual(await keysOn(shared.raws), [['rl:shape'], ['rl:shape'], ['rl:shape']]);
      return 42;
    });
    assert.equal(result, 42);
    assert.deepEqual(await keysOn(shared.raws), [[], [], []]);

    {
      const hold = await lock.acquire({ leaseMs: 10_000 });
      await hold[Symbol.asyncDispose]();
      assert.equal(hold.released, true);
    }
    assert.deepEqual(await keysOn(shared.raws), [[], [], []]);

    // The top-level helpers over handles of your own clients.
    const [a, b] = rl.clients;
    const two = multiLock([a.lock('rl:shape2'), b.lock('rl:shape2')]);
    assert.equal(two.quorum, 'all');
    assert.equal(await two.tryAcquire(), true);
    await two.release();
  } finally {
    await rl.close();
  }
  assert.equal(rl.closed, true);
});

test('two redlocks on different clients exclude each other, and a release wakes the waiter', async () => {
  const one = await Redlock.connect(shared.urls);
  const two = await Redlock.connect(shared.urls);
  try {
    const a = one.lock('rl:excl');
    const b = two.lock('rl:excl');
    await a.acquire();
    assert.equal(await b.tryAcquire(), false);
    await assert.rejects(b.acquire({ waitMs: 100 }), (e) => e instanceof NotAcquiredError && /redlock "rl:excl" \(3 members\)/.test(e.message));
    // Nothing of b stays behind after its failed attempts: only a's owner field.
    for (const [i, r] of shared.raws.entries()) assert.deepEqual(Object.keys(await r.hgetall('rl:excl')), [a.members[i].owner]);
    const waiting = b.acquire();
    // Parked, not just subscribed: the channel of b's bounded wait above stays
    // subscribed 100 ms after it.
    await eventually(() => two.clients[0].subscribedChannels() > 0 && two.clients.some((c) => c.metrics().waitersNow > 0),
      { what: 'b waiting on the lock channel' });
    await a.release();
    const hold = await within(waiting, 5000, "b's acquire after a's release");
    assert.equal(hold.holdCount, 1);
    assert.equal(await a.tryAcquire(), false);
    await hold.release();
    assert.deepEqual(await keysOn(shared.raws), [[], [], []]);
  } finally {
    await one.close();
    await two.close();
  }
});

// Voluntary context switches so far of this process's tokio runtime threads (Linux:
// /proc): each is a wake-up of a parked runtime thread.
function runtimeSwitches() {
  let total = 0;
  for (const task of fs.readdirSync('/proc/self/task')) {
    try {
      if (!fs.readFileSync(`/proc/self/task/${task}/comm`, 'utf8').startsWith('tokio-')) continue;
      total += Number(fs.readFileSync(`/proc/self/task/${task}/status`, 'utf8').match(/^voluntary_ctxt_switches:\s*(\d+)/m)[1]);
    } catch {
      // a thread that ended meanwhile
    }
  }
  return total;
}

// Issue 30: an uncontended Redlock cycle runs on the JS thread, its members' calls on
// their clients' host connections; a task or wake-up of a runtime thread per hold
// (a watcher per hold cost two per cycle) would put a thread hop back on every cycle.
// Measured: under 0.01 switches of the runtime threads per cycle.
test('uncontended redlock cycles wake no runtime thread', { skip: process.platform !== 'linux' && 'reads /proc' }, async () => {
  const rl = await Redlock.connect(shared.urls);
  try {
    const lock = rl.lock('rl:hops');
    for (let i = 0; i < 50; i++) await (await lock.acquire()).release(); // scripts loaded, connections warm
    const CYCLES = 300;
    const start = runtimeSwitches();
    for (let i = 0; i < CYCLES; i++) await (await lock.acquire()).release();
    const perCycle = (runtimeSwitches() - start) / CYCLES;
    assert.ok(perCycle < 0.2, `runtime threads woke ${perCycle.toFixed(3)} times per Redlock cycle (expected none)`);
  } finally {
    await rl.close();
  }
});

test('an exact counter under concurrent async workers on two redlock groups', async () => {
  const groups = [await Redlock.connect(shared.urls), await Redlock.connect(shared.urls)];
  const counterKey = 'rl:counter:value';
  const store = shared.raws[0];
  await store.set(counterKey, '0');
  const WORKERS_PER_GROUP = 3;
  const ROUNDS = 15;
  let inside = 0;
  let maxInside = 0;
  try {
    const workers = [];
    for (const group of groups) {
      for (let w = 0; w < WORKERS_PER_GROUP; w++) {
        const lock = group.lock('rl:counter'); // each worker its own holder
        workers.push((async () => {
          for (let i = 0; i < ROUNDS; i++) {
            await lock.using(async () => {
              inside++;
              maxInside = Math.max(maxInside, inside);
              const v = Number(await store.get(counterKey)); // read, yield, write: lost updates without exclusion
              await new Promise((resolve) => setImmediate(resolve));
              await store.set(counterKey, String(v + 1));
              inside--;
            });
          }
        })());
      }
    }
    await within(Promise.all(workers), 60_000, 'the counter workers');
    assert.equal(maxInside, 1);
    assert.equal(Number(await store.get(counterKey)), 2 * WORKERS_PER_GROUP * ROUNDS);
    await store.del(counterKey);
    assert.deepEqual(await keysOn(shared.raws), [[], [], []]);
  } finally {
    await Promise.all(groups.map((g) => g.close()));
  }
});

test('an abort cancels a waiting acquire, leaving nothing held', async () => {
  const holderClients = await Promise.all(shared.urls.map((u) => Client.connect(u)));
  const waiter = await Redlock.connect(shared.urls, { quorum: 'all' });
  try {
    // Member 2 busy (another client holds that name on server 2): the MultiLock takes
    // member 1, then waits on member 2.
    const blocker = holderClients[1].lock('rl:abort');
    await blocker.acquire();
    const lock = waiter.lock('rl:abort');
    const controller = new AbortController();
    const waiting = lock.acquire({ signal: controller.signal });
    await eventually(async () => (await shared.raws[0].exists('rl:abort')) === 1 && waiter.clients[1].subscribedChannels() > 0,
      { what: 'member 1 taken and member 2 waited on' });
    controller.abort(new Error('stop'));
    await assert.rejects(within(waiting, 3000, 'the aborted acquire'),
      (e) => e instanceof CancelledError && e.code === 'ERR_CANCELLED' && e.name === 'AbortError' && e.cause.message === 'stop');
    // Member 1 is given back (in the background), member 2 still the blocker's only.
    await eventually(async () => (await shared.raws[0].exists('rl:abort')) === 0, { what: 'member 1 released after the abort' });
    assert.deepEqual(Object.keys(await shared.raws[1].hgetall('rl:abort')), [blocker.owner]);
    assert.equal(await shared.raws[2].exists('rl:abort'), 0);
    await assert.rejects(lock.release(), NotOwnerError);
    await eventually(() => waiter.clients.every((c) => c.subscribedChannels() === 0), { what: 'the waiter unsubscribed' });

    // An already aborted signal: rejects at once.
    await assert.rejects(lock.acquire({ signal: AbortSignal.abort() }), CancelledError);
    await blocker.release();
    assert.deepEqual(await keysOn(shared.raws), [[], [], []]);
  } finally {
    await Promise.all(holderClients.map((c) => c.close()));
    await waiter.close();
  }
});

test('MultiLock needs every member; Redlock a majority', async () => {
  const other = await Client.connect(shared.urls[2]);
  const all = await Redlock.connect(shared.urls, { quorum: 'all' });
  const most = await Redlock.connect(shared.urls);
  try {
    const blocker = other.lock('rl:all');
    await blocker.acquire();
    const ml = all.lock('rl:all');
    assert.equal(ml.quorum, 'all');
    assert.equal(await ml.tryAcquire({ waitMs: 200 }), false);
    // What the short rounds took on servers 1 and 2 was given back.
    await eventually(async () => (await keysOn(shared.raws.slice(0, 2))).every((k) => k.length === 0), { what: 'servers 1 and 2 empty' });
    await assert.rejects(ml.acquire({ waitMs: 50 }), (e) => e instanceof NotAcquiredError && /multi-lock "rl:all"/.test(e.message));

    // 2 of 3 is a majority: the Redlock over the same servers gets it.
    const rl = most.lock('rl:all');
    assert.equal(await rl.tryAcquire(), true);
    await rl.release();

    // Once the third member is free, the MultiLock gets it; a waiter wakes on the release.
    const waiting = ml.acquire({ waitMs: 10_000 });
    // Parked, not just subscribed: the channel of the bounded waits above stays
    // subscribed 100 ms after them.
    await eventually(() => all.clients[2].subscribedChannels() > 0 && all.clients[2].metrics().waitersNow > 0,
      { what: 'the MultiLock waiting on member 3' });
    await blocker.release();
    const hold = await within(waiting, 10_000, 'the MultiLock after the release');
    assert.deepEqual((await keysOn(shared.raws)).map((k) => k.length), [1, 1, 1]);
    await hold.release();
    assert.deepEqual(await keysOn(shared.raws), [[], [], []]);
  } finally {
    await other.close();
    await all.close();
    await most.close();
  }
});

test('one of three servers down: a redlock still acquires and releases; a hold survives it', async () => {
  const env = await servers(3);
  const rl = await Redlock.connect(env.urls, FAST);
  const other = await Redlock.connect(env.urls, FAST);
  try {
    const lock = rl.lock('rl:down1');
    const held = await lock.acquire();
    await env.kill(1);
    // Still held (2 of 3), still excludes.
    assert.equal(lock.lost, false);
    assert.equal(held.signal.aborted, false);
    assert.equal(await other.lock('rl:down1').tryAcquire(), false);
    await lock.release(); // the quorum was released: success
    const live = [env.raws[0], env.raws[2]];
    assert.deepEqual(await keysOn(live), [[], []]);

    const again = other.lock('rl:down1');
    const hold = await within(again.acquire({ waitMs: 5000 }), 10_000, 'acquire with one server down');
    assert.deepEqual((await keysOn(live)).map((k) => k.length), [1, 1]);
    await hold.release();
    assert.deepEqual(await keysOn(live), [[], []]);
  } finally {
    await rl.close();
    await other.close();
    await env.stop();
  }
});

test('two of three servers down: acquire rejects with ConnectionError and leaves nothing on the live one', async () => {
  const env = await servers(3);
  const rl = await Redlock.connect(env.urls, FAST);
  try {
    await env.kill(1);
    await env.kill(2);
    const lock = rl.lock('rl:down2');
    // Member 1 (live) is taken first, then given back once the quorum is out of reach.
    await assert.rejects(within(lock.acquire(), 10_000, 'acquire with two servers down'),
      (e) => e instanceof ConnectionError && e.code === 'ERR_CONNECTION' && /quorum cannot be reached/.test(e.message));
    assert.deepEqual(await keysOn([env.raws[0]]), [[]]);
    await assert.rejects(within(lock.tryAcquire(), 10_000, 'tryAcquire with two servers down'), ConnectionError);
    assert.deepEqual(await keysOn([env.raws[0]]), [[]]);
    // Not even a reply latch stays for long: the client deletes them.
    await eventually(async () => (await leftoverKeys(env.raws[0])).length === 0, { what: 'no key at all on the live server' });
    await assert.rejects(lock.release(), NotOwnerError);
  } finally {
    await rl.close();
    await env.stop();
  }
});

test("'lost' once fewer than the quorum are held (key deleted on 2 of 3 servers)", async () => {
  // Short watchdog: members renew every 200 ms and find their key gone.
  const rl = await Redlock.connect(shared.urls, { watchdogTimeoutMs: 600 });
  try {
    const lock = rl.lock('rl:lost');
    const hold = await lock.acquire();
    let events = 0;
    lock.on('lost', () => events++);
    const lostEvent = once(lock, 'lost');

    // One member lost: 2 of 3 still held, so the redlock still is.
    await shared.raws[0].del('rl:lost');
    await eventually(() => lock.members[0].lost, { what: 'member 1 known lost', timeoutMs: 5000 });
    assert.equal(lock.lost, false);
    assert.equal(hold.signal.aborted, false);
    assert.equal(events, 0);

    await shared.raws[1].del('rl:lost');
    const [err] = await within(lostEvent, 5000, "the redlock's 'lost' event");
    assert.ok(err instanceof LockLostError);
    assert.equal(err.code, 'ERR_LOCK_LOST');
    assert.match(err.message, /member 1 \(rl:lost\).*member 2 \(rl:lost\)/s);
    assert.match(err.reason, /^2 of its members are no longer held: member 1 \(rl:lost\)/);
    assert.equal(lock.lost, true);
    assert.equal(hold.lost, true);
    assert.equal(hold.signal.reason, err);
    assert.equal(events, 1);
    await assert.rejects(hold.release(), LockLostError);
    // The release gave back the third member too.
    await eventually(async () => (await shared.raws[2].exists('rl:lost')) === 0, { what: 'member 3 released' });

    // A new hold: a fresh signal, the lost flag clears.
    const again = await lock.acquire();
    assert.equal(lock.lost, false);
    assert.notEqual(again.signal, hold.signal);
    await again.release();
    assert.equal(events, 1);
  } finally {
    await rl.close();
  }
  assert.deepEqual(await keysOn(shared.raws), [[], [], []]);
});

test('a holding multi-lock is kept reachable: its lost event fires after its last reference is dropped', { skip: typeof global.gc !== 'function' && 'needs --expose-gc' }, async () => {
  const rl = await Redlock.connect(shared.urls, { watchdogTimeoutMs: 600 });
  try {
    let told;
    const lostTold = new Promise((resolve) => { told = resolve; });
    await (async () => {
      const lock = redlock(rl.clients.map((c) => c.lock('rl:gc')));
      lock.on('lost', told);
      await lock.acquire();
    })();
    for (let i = 0; i < 3; i++) {
      global.gc();
      await new Promise((resolve) => setImmediate(resolve));
    }
    await shared.raws[0].del('rl:gc');
    await shared.raws[1].del('rl:gc');
    const err = await within(lostTold, 5000, "the dropped redlock's 'lost' event");
    assert.ok(err instanceof LockLostError);
  } finally {
    await rl.close();
  }
  assert.deepEqual(await keysOn(shared.raws), [[], [], []]);
});

test("a member's client closed: the redlock holds on, and its 'lost' comes through another client", async () => {
  const clients = await Promise.all(shared.urls.map((u) => Client.connect(u, { watchdogTimeoutMs: 600 })));
  try {
    const lock = redlock(clients.map((c) => c.lock('rl:closed')));
    const hold = await lock.acquire();
    await clients[0].close(); // releases member 1: 2 of 3 still held
    assert.equal(await shared.raws[0].exists('rl:closed'), 0);
    assert.equal(lock.lost, false);
    const lost = once(lock, 'lost');
    // Member 1 went with its client's close: one more taken away and the redlock
    // falls short, both named (which of several deleted members a renewal notices
    // first is a race, so only one is deleted).
    await shared.raws[1].del('rl:closed');
    const [err] = await within(lost, 5000, "'lost' through another client");
    assert.ok(err instanceof LockLostError);
    assert.match(err.message, /member 1 \(rl:closed\): its client shut down/);
    assert.match(err.message, /member 2 \(rl:closed\)/);
    assert.equal(hold.signal.aborted, true);
    await assert.rejects(hold.release(), LockLostError);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
  assert.deepEqual(await keysOn(shared.raws), [[], [], []]);
});
