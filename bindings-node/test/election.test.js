'use strict';
// Leader election: campaigns lead with growing terms, resign hands over at once,
// leader() answers right after a campaign, a lost leadership is told ('lost',
// the leadership's signal), observers tell every change in order, an AbortSignal
// ends a campaign; and using()'s minHoldMs (a cron job's minimum hold).

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { once } = require('node:events');
const { Client, LockLostError, NotAcquiredError } = require('..');
const { within, eventually, useRedis, leftoverKeys } = require('./helpers');

let server;
let redis;
useRedis((env) => ({ server, redis } = env), false);

test('candidates take turns with growing terms, and leader() answers at once', async () => {
  const a = await Client.connect(server.url, { watchdogTimeoutMs: 1500, appName: 'svc-a' });
  const b = await Client.connect(server.url, { watchdogTimeoutMs: 1500 });
  try {
    const first = a.election('el:turns', { label: 'replica-0' });
    const second = b.election('el:turns');
    assert.equal(await first.leader(), null);
    const leadership = await first.campaign();
    assert.equal(typeof leadership.term, 'bigint');
    assert.equal(first.term, leadership.term);
    assert.equal(first.leading, true);
    const seen = await second.leader();
    assert.equal(seen.term, leadership.term);
    assert.equal(seen.holder.owner, first.owner);
    assert.equal(seen.holder.app, 'svc-a');
    assert.equal(seen.holder.thread, 'replica-0');
    assert.equal(seen.holder.pid, process.pid);
    assert.ok(seen.leaseLeftMs > 0 && seen.leaseLeftMs <= 1500);

    assert.equal(await second.campaign({ waitMs: 0 }), null);
    const next = second.campaign();
    await eventually(() => b.metrics().waitersNow === 1, { what: 'the second candidate to wait' });
    await assert.rejects(first.campaign({ waitMs: 0 }), { code: 'ERR_INVALID_ARGUMENT', message: /already leads/ });
    assert.equal(await leadership.resign(), true);
    const won = await within(next, 3000, 'the next leader');
    assert.ok(won.term > leadership.term);
    assert.equal(first.leading, false);
    assert.equal(second.leading, true);
    assert.equal(await leadership.resign(), false);
    assert.equal(await second.resign(), true);
    assert.equal(await second.resign(), false);
    assert.equal(await first.leader(), null);
  } finally {
    await a.close();
    await b.close();
  }
});

test("a lost leadership is told: 'lost' on the candidate, the leadership's signal", async () => {
  const client = await Client.connect(server.url, { watchdogTimeoutMs: 600 });
  try {
    const election = client.election('el:lost');
    const lost = once(election, 'lost');
    const leadership = await election.campaign();
    await redis.del('el:lost');
    const [err] = await within(lost, 3000, "'lost'");
    assert.ok(err instanceof LockLostError);
    assert.equal(leadership.lost, true);
    assert.equal(leadership.signal.aborted, true);
    assert.equal(election.leading, false);
    assert.equal(await leadership.resign(), false);
    const again = await election.campaign({ waitMs: 2000 });
    assert.ok(again.term > leadership.term);
    await again.resign();
  } finally {
    await client.close();
  }
});

test('an observer tells every leader in order; an AbortSignal ends a campaign', async () => {
  const a = await Client.connect(server.url);
  const b = await Client.connect(server.url);
  try {
    const observer = await a.election('el:observe').observe();
    assert.equal(await observer.next(), null);
    assert.equal(await observer.next({ timeoutMs: 100 }), undefined);
    const candidates = [a.election('el:observe'), b.election('el:observe')];
    const terms = [];
    for (let i = 0; i < 6; i++) {
      const leadership = await candidates[i % 2].campaign();
      terms.push(leadership.term);
      await leadership.resign();
    }
    const told = [];
    for await (const leader of observer) {
      if (leader !== null) told.push(leader.term);
      if (told.length === terms.length) break;
    }
    assert.deepEqual(told, terms);

    const holder = await candidates[0].campaign();
    const controller = new AbortController();
    const waiting = candidates[1].campaign({ signal: controller.signal });
    await eventually(() => b.metrics().waitersNow === 1, { what: 'the campaign to wait' });
    controller.abort();
    await assert.rejects(waiting, { code: 'ERR_CANCELLED' });
    assert.equal(candidates[1].leading, false);
    await holder.resign();
  } finally {
    await a.close();
    await b.close();
  }
  assert.deepEqual(await leftoverKeys(redis), []);
});

test("using()'s minHoldMs keeps a short job's lock, and later callers skip", async () => {
  const client = await Client.connect(server.url, { watchdogTimeoutMs: 1500 });
  try {
    const lock = client.lock('el:cron');
    const started = Date.now();
    assert.equal(await lock.using(async () => 7, { waitMs: 0, minHoldMs: 800 }), 7);
    assert.equal(client.heldCount(), 0);
    const pttl = await redis.pttl('el:cron');
    assert.ok(pttl > 0 && pttl <= 800, `pttl ${pttl}`);
    await assert.rejects(lock.using(async () => 8, { waitMs: 0, minHoldMs: 800 }), NotAcquiredError);
    await eventually(async () => (await redis.exists('el:cron')) === 0, { what: 'the minimum hold to end' });
    assert.ok(Date.now() - started >= 790);
    // A job longer than the minimum releases at its end.
    await lock.using(() => new Promise((resolve) => setTimeout(resolve, 100)), { minHoldMs: 20 });
    assert.equal(await redis.exists('el:cron'), 0);
  } finally {
    await client.close();
  }
});
