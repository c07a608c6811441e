'use strict';
// AbortSignal before and during a wait, 1000 pending acquires on the Rust runtime,
// and what close() does to pending waits. Nothing held or subscribed afterwards.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { getEventListeners } = require('node:events');
const { Client, CancelledError, ClientClosedError, FerrolockError } = require('..');
const { eventually, within, leftoverKeys, useRedis } = require('./helpers');

let server;
let redis;
let client;
useRedis((env) => ({ server, redis, client } = env));

function isAbort(e) {
  return e instanceof CancelledError && e instanceof FerrolockError && e.name === 'AbortError' && e.code === 'ERR_CANCELLED';
}

async function numsub(channel) {
  return (await redis.pubsub('NUMSUB', channel))[1];
}

test('an already aborted signal rejects at once and touches nothing', async () => {
  const a = client.lock('abort:before');
  const reason = new Error('not needed any more');
  const signal = AbortSignal.abort(reason);
  await assert.rejects(a.acquire({ signal }), (e) => isAbort(e) && e.cause === reason);
  await assert.rejects(a.tryAcquire({ signal, waitMs: 1000 }), isAbort);
  await assert.rejects(a.using(() => assert.fail('must not run'), { signal }), isAbort);
  assert.equal(await a.isLocked(), false);
  assert.equal(client.subscribedChannels(), 0);
});

test('aborting during a wait rejects with AbortError and leaves nothing held or subscribed', async () => {
  const holder = client.lock('abort:during');
  const waiter = client.lock('abort:during');
  await holder.acquire();
  const ac = new AbortController();
  const pending = waiter.acquire({ signal: ac.signal });
  // The waiter is parked on the lock's channel: abort it there.
  await eventually(async () => client.subscribedChannels() === 1 && (await numsub('redisson_lock__channel:{abort:during}')) === 1, {
    what: 'waiter subscribed',
  });
  ac.abort();
  await assert.rejects(within(pending, 2000, 'aborted acquire'), isAbort);
  assert.equal(await waiter.isHeld(), false);
  assert.equal(await waiter.holdCount(), 0);
  await eventually(() => client.subscribedChannels() === 0, { what: 'unsubscribed locally' });
  await eventually(async () => (await numsub('redisson_lock__channel:{abort:during}')) === 0, { what: 'unsubscribed on the server' });
  // The abort did not disturb the holder, and a release now wakes nobody stale.
  assert.equal(await holder.isHeld(), true);
  await holder.release();
  assert.equal(await waiter.tryAcquire(), true);
  await waiter.release();
  // A signal aborted after the acquire succeeded changes nothing.
  const ac2 = new AbortController();
  const hold = await waiter.acquire({ signal: ac2.signal });
  assert.equal(getEventListeners(ac2.signal, 'abort').length, 0, 'no listener left on the signal');
  ac2.abort();
  assert.equal(await waiter.isHeld(), true);
  await hold.release();
});

test('1000 pending acquires keep the event loop responsive; aborting them leaves nothing behind', async () => {
  const name = 'abort:many';
  const holder = client.lock(name);
  await holder.acquire();
  const ac = new AbortController();
  const waiters = Array.from({ length: 1000 }, () => client.lock(name));
  // Measure timer lateness while the 1000 waits are started and pending.
  const gaps = [];
  let last = performance.now();
  const interval = setInterval(() => {
    const now = performance.now();
    gaps.push(now - last);
    last = now;
  }, 10);
  const pending = waiters.map((w) => w.acquire({ signal: ac.signal }).then(() => 'acquired', (e) => e));
  let settledEarly = false;
  Promise.race(pending).then(() => { settledEarly = true; });
  await eventually(() => client.subscribedChannels() === 1, { what: 'waiters subscribed' });
  assert.equal(getEventListeners(ac.signal, 'abort').length, 1, '1000 waits share one abort listener');
  const until = performance.now() + 500;
  await eventually(() => performance.now() >= until, { timeoutMs: 5000, what: '500 ms of ticks' });
  clearInterval(interval);
  assert.equal(settledEarly, false, 'no waiter may get the held lock');
  const ticks = gaps.length;
  const worst = Math.max(...gaps);
  assert.ok(ticks >= 20, `only ${ticks} ticks of a 10 ms interval`);
  assert.ok(worst < 250, `event loop blocked for ${worst.toFixed(1)} ms`);

  ac.abort();
  const results = await within(Promise.all(pending), 15_000, '1000 aborted waits');
  assert.equal(results.filter(isAbort).length, 1000);
  assert.equal(await holder.holdCount(), 1);
  await eventually(() => client.subscribedChannels() === 0, { what: 'unsubscribed after 1000 aborts' });
  await eventually(async () => (await numsub(`redisson_lock__channel:{${name}}`)) === 0, { what: 'server side unsubscribe' });
  await holder.release();
  // Unlock latches are swept a few ms after a release.
  await eventually(async () => (await leftoverKeys(redis)).length === 0, { what: 'no keys left' });
});

test('close() stops pending waits with ERR_CLIENT_CLOSED and later calls fail', async () => {
  const c = await Client.connect(server.url);
  const holder = client.lock('abort:close');
  await holder.acquire();
  const w = c.lock('abort:close');
  const pending = w.acquire().then(() => 'acquired', (e) => e);
  await eventually(() => c.subscribedChannels() === 1, { what: 'waiter subscribed' });
  await c.close();
  assert.equal(c.closed, true);
  const ended = await within(pending, 3000, 'wait stopped by close');
  assert.ok(ended instanceof ClientClosedError && ended.code === 'ERR_CLIENT_CLOSED', `pending acquire ended with ${ended}`);
  await assert.rejects(w.tryAcquire(), ClientClosedError);
  await c.close(); // idempotent
  await holder.release();
  await eventually(async () => (await numsub('redisson_lock__channel:{abort:close}')) === 0, { what: 'closed client unsubscribed' });
});
