'use strict';
// The semaphore (Redisson's RSemaphore) through the Node API: every verb, limits
// under contention, wake-up by message, aborted waits taking nothing, and every
// error from a real cause.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { setTimeout: delay } = require('node:timers/promises');
const { inspect } = require('node:util');
const {
  Client, Semaphore, Permits, NotAcquiredError, WrongTypeError, ClientClosedError, ArgumentTypeError, InvalidArgumentError,
  CancelledError,
} = require('..');
const { eventually, within, useRedis, parked } = require('./helpers');

let server;
let redis;
let client;
useRedis((env) => ({ server, redis, client } = env));

const isAbort = (e) => e instanceof CancelledError && e.name === 'AbortError' && e.code === 'ERR_CANCELLED';

async function numsub(channel) {
  return (await redis.pubsub('NUMSUB', channel))[1];
}

test('every verb: trySetPermits, acquire (permits, waitMs), release, available, drain', async () => {
  const sem = client.semaphore('sem:verbs');
  assert.ok(sem instanceof Semaphore);
  assert.equal(sem.name, 'sem:verbs');
  assert.equal(await sem.available(), 0, 'a semaphore that does not exist has none');
  assert.equal(await sem.trySetPermits(3), true);
  assert.equal(await sem.trySetPermits(5), false, 'an existing count is left alone');
  assert.equal(await sem.available(), 3);
  assert.equal(await redis.get('sem:verbs'), '3', "Redisson's key: the free permits");

  const one = await sem.acquire();
  assert.ok(one instanceof Permits);
  assert.equal(one.count, 1);
  assert.equal(one.semaphore, sem);
  const two = await sem.acquire({ permits: 2, waitMs: 0 });
  assert.equal(two.count, 2);
  assert.equal(await sem.available(), 0);
  let t0 = performance.now();
  assert.equal(await sem.acquire({ waitMs: 100 }), null, 'none free in time');
  assert.ok(performance.now() - t0 >= 90);
  assert.match(inspect(two), /Permits \{ semaphore: 'sem:verbs', count: 2, released: false \}/);

  await two.release();
  assert.equal(two.released, true);
  await two.release(); // a second release gives nothing back
  assert.equal(await sem.available(), 2);
  await one[Symbol.asyncDispose]();
  assert.equal(await sem.available(), 3);

  // Permits are nobody's: anyone gives back any number, past the initial count too.
  assert.equal(await sem.release(), 4);
  assert.equal(await sem.release(2), 6);
  assert.equal(await sem.drain(), 6);
  assert.equal(await sem.available(), 0);
  assert.equal(await sem.drain(), 0);
  t0 = performance.now();
  assert.equal(await sem.acquire({ permits: 1, waitMs: 0 }), null);
  assert.equal(await sem.release(1), 1);

  // using(): holds permits while fn runs, gives them back however it ends.
  assert.equal(await sem.using(async (p) => { assert.equal(await sem.available(), 0); return p.count; }), 1);
  assert.equal(await sem.available(), 1);
  await assert.rejects(sem.using(() => { throw new Error('boom'); }), /boom/);
  assert.equal(await sem.available(), 1);
  const busy = await sem.acquire();
  await assert.rejects(sem.using(() => assert.fail('must not run'), { waitMs: 30 }), NotAcquiredError);
  await busy.release();
  assert.equal(await sem.available(), 1);
});

test('at most N inside under contention: 3 permits, 8 waiters on 2 clients', async () => {
  const name = 'sem:limit';
  const c2 = await Client.connect(server.url);
  try {
    assert.equal(await client.semaphore(name).trySetPermits(3), true);
    let inside = 0;
    let maxInside = 0;
    let sections = 0;
    const worker = async (sem) => {
      for (let i = 0; i < 15; i++) {
        const permits = await sem.acquire();
        inside++;
        maxInside = Math.max(maxInside, inside);
        await delay(2); // lets the others in, if the semaphore let them
        inside--;
        sections++;
        await permits.release();
      }
    };
    const sems = Array.from({ length: 8 }, (_, i) => (i % 2 ? c2 : client).semaphore(name));
    await within(Promise.all(sems.map(worker)), 60_000, '120 sections');
    assert.equal(sections, 120);
    assert.ok(maxInside <= 3, `${maxInside} inside at once`);
    assert.ok(maxInside >= 2, `the permits were used together (${maxInside} at most)`);
    assert.equal(await sems[0].available(), 3, 'every permit came back');
  } finally {
    await c2.close();
  }
});

test('a waiter is woken by the release message, and several permits are waited for together', async () => {
  const name = 'sem:wake';
  const holderSem = client.semaphore(name);
  await holderSem.trySetPermits(2);
  const first = await holderSem.acquire();
  const second = await holderSem.acquire();
  const c2 = await Client.connect(server.url);
  try {
    const waiterSem = c2.semaphore(name);
    let settled = false;
    const waiting = waiterSem.acquire({ permits: 2, waitMs: 30_000 }).finally(() => { settled = true; });
    await eventually(async () => c2.subscribedChannels() === 1 && (await numsub(`redisson_sc:{${name}}`)) === 1, { what: 'the waiter subscribed' });
    // One permit back is not enough for it: it tries again and goes on waiting.
    await first.release();
    await eventually(async () => (await holderSem.available()) === 1, { what: 'one free' });
    assert.equal(settled, false);
    const t0 = performance.now();
    await second.release();
    const permits = await within(waiting, 5000, 'the waiter woken');
    const took = performance.now() - t0;
    assert.equal(permits.count, 2);
    assert.ok(took < 3000, `woken after ${took} ms of a 30 s wait`);
    assert.equal(await waiterSem.available(), 0);
    await permits.release();
    assert.equal(await waiterSem.available(), 2);
    await eventually(() => c2.subscribedChannels() === 0, { what: 'unsubscribed' });
  } finally {
    await c2.close();
  }
});

test('an aborted wait takes nothing, even when the abort races a release', async () => {
  const name = 'sem:abort';
  const sem = client.semaphore(name);
  await sem.trySetPermits(1);
  // Already aborted: at once, nothing touched.
  const reason = new Error('not needed');
  await assert.rejects(sem.acquire({ signal: AbortSignal.abort(reason) }), (e) => isAbort(e) && e.cause === reason);
  assert.equal(await sem.available(), 1);

  // Aborted while parked.
  const held = await sem.acquire();
  const ac = new AbortController();
  const pending = sem.acquire({ signal: ac.signal });
  // Parked, not just subscribed: a channel of a test before may still be subscribed
  // (100 ms after its last waiter left) and count for this one.
  await eventually(() => parked(client), { what: 'waiter subscribed' });
  ac.abort();
  await assert.rejects(within(pending, 3000, 'aborted wait'), (e) => isAbort(e) && /semaphore "sem:abort".*nothing was taken/.test(e.message));
  await eventually(() => client.subscribedChannels() === 0, { what: 'unsubscribed' });
  await held.release();
  assert.equal(await sem.available(), 1, 'the aborted waiter took nothing');

  // An abort in the same tick as the release that wakes the waiter: whichever wins,
  // the permit is either the waiter's (resolved) or back in the semaphore.
  for (let i = 0; i < 20; i++) {
    const hold = await sem.acquire();
    const abort = new AbortController();
    const wait = sem.acquire({ signal: abort.signal }).then((p) => p, (e) => (isAbort(e) ? null : Promise.reject(e)));
    // Parked: the round before's subscription outlives its waiter by 100 ms.
    await eventually(() => parked(client), { what: 'waiter subscribed' });
    const released = hold.release();
    abort.abort();
    await released;
    const got = await within(wait, 5000, 'the racing wait');
    if (got) await got.release();
    await eventually(async () => (await sem.available()) === 1, { what: `round ${i}: the permit back` });
  }
  assert.equal(await sem.available(), 1);
});

test('errors from real causes: bad options and counts, ERR_WRONG_TYPE, a closed client', async () => {
  const sem = client.semaphore('sem:errors');
  await sem.trySetPermits(1);
  const typeErr = (pattern) => (e) => e instanceof ArgumentTypeError && e instanceof InvalidArgumentError && pattern.test(e.message);
  const rangeErr = (pattern) => (e) => e instanceof InvalidArgumentError && !(e instanceof TypeError) && e.code === 'ERR_INVALID_ARGUMENT' && pattern.test(e.message);
  await assert.rejects(sem.acquire({ count: 2 }), typeErr(/semaphore\.acquire options: unknown option "count" \(did you mean permits\?\); valid options: permits, signal, waitMs$/));
  await assert.rejects(sem.acquire({ timeout: 5 }), typeErr(/did you mean waitMs/));
  await assert.rejects(sem.using(() => 1, { leaseMs: 5 }), typeErr(/semaphore\.using options: unknown option "leaseMs"; valid options: permits, signal, waitMs$/));
  await assert.rejects(sem.acquire({ permits: '2' }), typeErr(/permits must be a number, not string/));
  await assert.rejects(sem.acquire({ signal: {} }), typeErr(/signal must be an AbortSignal/));
  await assert.rejects(sem.acquire(3), typeErr(/options must be an object/));
  await assert.rejects(sem.acquire({ permits: 0 }), rangeErr(/permits = 0 is out of range/));
  await assert.rejects(sem.acquire({ permits: -1 }), rangeErr(/permits = -1 is out of range/));
  await assert.rejects(sem.acquire({ permits: 1.5 }), rangeErr(/whole number/));
  await assert.rejects(sem.acquire({ waitMs: -1 }), rangeErr(/waitMs/));
  await assert.rejects(sem.release(0), rangeErr(/permits = 0/));
  await assert.rejects(sem.release('1'), typeErr(/permits must be a number/));
  await assert.rejects(sem.trySetPermits(), typeErr(/trySetPermits\(\) needs permits/));
  await assert.rejects(sem.trySetPermits(-3), rangeErr(/permits = -3/));
  await assert.rejects(sem.using('nope'), typeErr(/using\(\) needs a function/));
  assert.throws(() => client.semaphore(''), rangeErr(/semaphore name is empty/));
  assert.throws(() => client.semaphore({}), typeErr(/a semaphore name must be a string or a Uint8Array, not object/));
  assert.throws(() => new Semaphore(), InvalidArgumentError);
  assert.equal(await sem.available(), 1, 'no refused call took or gave anything');

  await redis.hset('sem:hash', 'field', '1');
  const wrong = client.semaphore('sem:hash');
  const isWrongType = (e) => e instanceof WrongTypeError && e.code === 'ERR_WRONG_TYPE';
  await assert.rejects(wrong.acquire({ waitMs: 0 }), isWrongType);
  await assert.rejects(wrong.available(), isWrongType);
  await assert.rejects(wrong.release(), isWrongType);
  await redis.set('sem:text', 'many');
  await assert.rejects(client.semaphore('sem:text').available(), (e) => isWrongType(e) && /not a number of permits/.test(e.message));

  // A closed client: its handles refuse every call, and a waiting acquire ends.
  const c = await Client.connect(server.url);
  const mine = c.semaphore('sem:errors');
  const held = await sem.acquire();
  const waiting = mine.acquire().then(() => 'acquired', (e) => e);
  await eventually(() => c.subscribedChannels() === 1, { what: 'waiter subscribed' });
  await c.close();
  const ended = await within(waiting, 3000, 'the wait stopped by close');
  assert.ok(ended instanceof ClientClosedError, `ended with ${ended}`);
  assert.throws(() => c.semaphore('sem:errors'), ClientClosedError);
  await assert.rejects(mine.available(), ClientClosedError);
  await assert.rejects(mine.acquire({ waitMs: 0 }), ClientClosedError);
  await assert.rejects(mine.release(), ClientClosedError);
  await assert.rejects(mine.trySetPermits(1), ClientClosedError);
  await assert.rejects(mine.drain(), ClientClosedError);
  await held.release();
  assert.equal(await sem.available(), 1, 'the closed waiter took nothing');
  await redis.del('sem:hash', 'sem:text');
});
