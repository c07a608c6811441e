'use strict';
// The count-down latch (Redisson's RCountDownLatch) through the Node API, and the
// family's names in both entry points.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { inspect } = require('node:util');
const ferrolock = require('..');
const { Client, CountDownLatch, WrongTypeError, ClientClosedError, ArgumentTypeError, InvalidArgumentError, CancelledError } = ferrolock;
const { eventually, within, useRedis, parked } = require('./helpers');

let server;
let redis;
let client;
useRedis((env) => ({ server, redis, client } = env));

const isAbort = (e) => e instanceof CancelledError && e.name === 'AbortError' && e.code === 'ERR_CANCELLED';

test('every verb: trySetCount, countDown, count, wait (open, bounded)', async () => {
  const latch = client.countDownLatch('latch:verbs');
  assert.ok(latch instanceof CountDownLatch);
  assert.equal(latch.name, 'latch:verbs');
  assert.match(inspect(latch), /CountDownLatch \{ name: 'latch:verbs' \}/);
  assert.equal(await latch.count(), 0, 'a latch that does not exist is open');
  assert.equal(await latch.wait(), true);
  assert.equal(await latch.trySetCount(2), true);
  assert.equal(await latch.trySetCount(5), false, 'still counting down: left alone');
  assert.equal(await latch.count(), 2);
  const t0 = performance.now();
  assert.equal(await latch.wait({ waitMs: 100 }), false);
  assert.ok(performance.now() - t0 >= 90);
  assert.equal(await latch.countDown(), 1);
  assert.equal(await latch.count(), 1);
  assert.equal(await latch.countDown(), 0);
  assert.equal(await latch.wait({ waitMs: 0 }), true);
  assert.equal(await redis.exists('latch:verbs'), 0, 'an open latch is no key');
  assert.equal(await latch.countDown(), 0, 'counting down an open latch');
  assert.equal(await latch.trySetCount(1), true, 'an open latch may be set again');
  await latch.countDown();
});

test('every waiter, on every client, is woken by the opening message', async () => {
  const name = 'latch:wake';
  const c2 = await Client.connect(server.url);
  try {
    const latch = client.countDownLatch(name);
    await latch.trySetCount(3);
    const waits = [client, c2, c2].map((c) => c.countDownLatch(name).wait({ waitMs: 30_000 }));
    // Parked, not just subscribed: the client's channel of the test before may still be
    // subscribed (100 ms after its last waiter left) and count for this one's.
    await eventually(() => parked(c2, 2) && parked(client), { what: 'waiters subscribed' });
    await latch.countDown();
    await c2.countDownLatch(name).countDown();
    assert.equal(await latch.count(), 1);
    const t0 = performance.now();
    assert.equal(await latch.countDown(), 0);
    assert.deepEqual(await within(Promise.all(waits), 5000, 'every waiter woken'), [true, true, true]);
    assert.ok(performance.now() - t0 < 3000, 'woken by the message, not the 30 s bound');
    await eventually(() => client.subscribedChannels() === 0 && c2.subscribedChannels() === 0, { what: 'unsubscribed' });
  } finally {
    await c2.close();
  }
});

test('an aborted wait rejects with AbortError and leaves no subscription', async () => {
  const latch = client.countDownLatch('latch:abort');
  await latch.trySetCount(1);
  const reason = new Error('enough');
  await assert.rejects(latch.wait({ signal: AbortSignal.abort(reason) }), (e) => isAbort(e) && e.cause === reason);
  const ac = new AbortController();
  const pending = latch.wait({ signal: ac.signal });
  await eventually(() => client.subscribedChannels() === 1, { what: 'waiter subscribed' });
  ac.abort();
  await assert.rejects(within(pending, 3000, 'aborted wait'), (e) => isAbort(e) && /count-down latch "latch:abort"/.test(e.message));
  await eventually(() => client.subscribedChannels() === 0, { what: 'unsubscribed' });
  assert.equal(await latch.count(), 1, 'the count is untouched');
  await latch.countDown();
});

test('errors from real causes: bad counts and options, ERR_WRONG_TYPE, a closed client', async () => {
  const latch = client.countDownLatch('latch:errors');
  const typeErr = (pattern) => (e) => e instanceof ArgumentTypeError && pattern.test(e.message);
  const rangeErr = (pattern) => (e) => e instanceof InvalidArgumentError && !(e instanceof TypeError) && pattern.test(e.message);
  await assert.rejects(latch.trySetCount(0), rangeErr(/count = 0 is out of range/));
  await assert.rejects(latch.trySetCount(-2), rangeErr(/count = -2/));
  await assert.rejects(latch.trySetCount(), typeErr(/trySetCount\(\) needs count/));
  await assert.rejects(latch.trySetCount('3'), typeErr(/count must be a number/));
  await assert.rejects(latch.wait({ timeout: 10 }), typeErr(/countDownLatch\.wait options: unknown option "timeout" \(did you mean waitMs\?\); valid options: signal, waitMs$/));
  await assert.rejects(latch.wait({ waitMs: -1 }), rangeErr(/waitMs/));
  await assert.rejects(latch.wait({ signal: 'x' }), typeErr(/signal must be an AbortSignal/));
  assert.throws(() => client.countDownLatch('x'.repeat(4097)), rangeErr(/4096/));
  assert.equal(await latch.count(), 0, 'nothing was set');

  await redis.hset('latch:hash', 'f', '1');
  const isWrongType = (e) => e instanceof WrongTypeError && e.code === 'ERR_WRONG_TYPE';
  const wrong = client.countDownLatch('latch:hash');
  await assert.rejects(wrong.count(), isWrongType);
  await assert.rejects(wrong.countDown(), isWrongType);
  await assert.rejects(wrong.wait({ waitMs: 0 }), isWrongType);
  await redis.del('latch:hash');

  const c = await Client.connect(server.url);
  const mine = c.countDownLatch('latch:errors');
  await latch.trySetCount(1);
  const waiting = mine.wait().then(() => 'open', (e) => e);
  await eventually(() => c.subscribedChannels() === 1, { what: 'waiter subscribed' });
  await c.close();
  assert.ok((await within(waiting, 3000, 'the wait stopped by close')) instanceof ClientClosedError);
  assert.throws(() => c.countDownLatch('latch:errors'), ClientClosedError);
  await assert.rejects(mine.count(), ClientClosedError);
  await assert.rejects(mine.countDown(), ClientClosedError);
  await assert.rejects(mine.trySetCount(1), ClientClosedError);
  await assert.rejects(mine.wait({ waitMs: 0 }), ClientClosedError);
  assert.equal(await latch.count(), 1);
  await latch.countDown();
});

test('the ESM entry exports the same names as the CommonJS one', async () => {
  const esm = await import('../index.mjs');
  const names = Object.keys(ferrolock).sort();
  assert.deepEqual(Object.keys(esm).filter((k) => k !== 'default').sort(), names);
  for (const name of ['ReadWriteLock', 'Semaphore', 'Permits', 'PermitExpirableSemaphore', 'Permit', 'CountDownLatch']) {
    assert.equal(esm[name], ferrolock[name], name);
  }
});
