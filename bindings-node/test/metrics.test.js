'use strict';
// client.metrics() (a plain camelCase object), client.metricsText() (Prometheus
// text from core), and appName in the connections' names.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { once } = require('node:events');
const { Client, InvalidArgumentError, ArgumentTypeError } = require('..');
const { eventually, within, useRedis } = require('./helpers');

let server;
let redis;
useRedis((env) => ({ server, redis } = env), false);

function assertHistogram(h, count) {
  assert.deepEqual(Object.keys(h).sort(), ['bounds', 'count', 'counts', 'sum']);
  assert.ok(h.bounds.length > 0);
  assert.equal(h.counts.length, h.bounds.length + 1);
  assert.ok(h.bounds.every((b, i) => i === 0 || b > h.bounds[i - 1]), 'ascending bounds');
  assert.equal(h.count, count);
  assert.equal(h.counts.reduce((a, b) => a + b, 0), count, 'not cumulative: the buckets add up to the count');
  assert.ok(h.sum >= 0);
}

test('metrics: acquires by outcome, wait and hold histograms, holds and waiters now, losses', async () => {
  const a = await Client.connect(server.url, { watchdogTimeoutMs: 600 });
  const b = await Client.connect(server.url);
  try {
    const m0 = a.metrics();
    assert.deepEqual(
      Object.keys(m0).sort(),
      ['acquired', 'cancelled', 'clientId', 'failed', 'failoverLossReport', 'failoversNoticed', 'hold', 'holdsNow', 'losses',
        'notAcquired', 'reconnects', 'renewalFailures', 'renewals', 'wait', 'waitersNow'],
    );
    assert.equal(m0.failoversNoticed, 0);
    assertHistogram(m0.failoverLossReport, 0);
    assert.equal(m0.clientId, a.id);
    assert.equal(m0.acquired + m0.notAcquired + m0.failed + m0.cancelled, 0);
    assertHistogram(m0.wait, 0);
    assertHistogram(m0.hold, 0);

    const lock = a.lock('metrics:one');
    const hold = await lock.acquire();
    assert.equal(a.metrics().holdsNow, 1);
    await eventually(() => a.metrics().renewals > 0, { what: 'a watchdog renewal' });
    await hold.release();

    const held = b.lock('metrics:one');
    await held.acquire();
    assert.equal(await lock.tryAcquire({ waitMs: 0 }), false); // not acquired
    const ac = new AbortController();
    const waiting = lock.acquire({ signal: ac.signal }).catch((e) => e);
    await eventually(() => a.metrics().waitersNow === 1, { what: 'one waiter' });
    ac.abort(); // cancelled
    assert.equal((await waiting).code, 'ERR_CANCELLED');
    await held.release();

    await lock.acquire();
    const lost = once(lock, 'lost');
    await redis.del('metrics:one');
    await within(lost, 3000, "'lost'");

    const m = a.metrics();
    assert.equal(m.acquired, 2);
    assert.equal(m.notAcquired, 1);
    assert.equal(m.cancelled, 1);
    assert.equal(m.failed, 0);
    assertHistogram(m.wait, 4);
    assertHistogram(m.hold, 2); // one released, one lost
    assert.equal(m.holdsNow, 0);
    assert.equal(m.waitersNow, 0);
    assert.equal(m.losses, 1);
    assert.ok(m.renewals >= 1);
  } finally {
    await a.close();
    await b.close();
  }
  // A final snapshot after close.
  assert.equal(a.metrics().acquired, 2);
});

test('metricsText: core\'s Prometheus text, labelled with the client id', async () => {
  const c = await Client.connect(server.url);
  try {
    await (await c.lock('metrics:text').acquire()).release();
    const text = c.metricsText();
    assert.equal(typeof text, 'string');
    assert.match(text, /^# (HELP|TYPE) ferrolock_/m);
    assert.ok(text.includes(`client="${c.id}"`));
    assert.match(text, /^ferrolock_\w+\{[^}]*client="[^"]+"[^}]*\} \d/m);
    assert.ok(text.includes(`ferrolock_failovers_noticed_total{client="${c.id}"} 0`), text);
    assert.ok(text.includes(`ferrolock_failover_loss_report_seconds_count{client="${c.id}"} 0`), text);
  } finally {
    await c.close();
  }
});

test('appName: every connection is named ferrolock:<client id>:<appName>; a bad one is refused', async () => {
  const list = async () => (await redis.client('LIST')).split('\n').filter(Boolean);
  const c = await Client.connect(server.url, { appName: 'billing-worker.1' });
  const plain = await Client.connect(server.url);
  try {
    // A waiter opens the pub/sub connection too.
    const holder = plain.lock('metrics:app');
    await holder.acquire();
    const waiting = c.lock('metrics:app').acquire();
    await eventually(() => c.subscribedChannels() === 1, { what: 'the waiter subscribed' });
    const named = (await list()).filter((l) => l.includes(` name=ferrolock:${c.id}`));
    assert.ok(named.length >= 2, `command and pub/sub connections: ${named.join('\n')}`);
    for (const line of named) assert.match(line, new RegExp(` name=ferrolock:${c.id}:billing-worker\\.1 `));
    const plainNamed = (await list()).filter((l) => l.includes(` name=ferrolock:${plain.id}`));
    assert.ok(plainNamed.length >= 1);
    for (const line of plainNamed) assert.match(line, new RegExp(` name=ferrolock:${plain.id} `));
    await holder.release();
    await (await waiting).release();
  } finally {
    await c.close();
    await plain.close();
  }
  for (const appName of ['', 'has space', 'x'.repeat(65), 'a:b']) {
    await assert.rejects(Client.connect(server.url, { appName }), (e) => e instanceof InvalidArgumentError && !(e instanceof TypeError), appName);
  }
  await assert.rejects(Client.connect(server.url, { appName: 7 }), ArgumentTypeError);
});

test('reconnects are counted', async () => {
  const c = await Client.connect(server.url, { appName: 'reconnect-test' });
  try {
    const lock = c.lock('metrics:reconnect');
    await (await lock.acquire()).release();
    const before = c.metrics().reconnects;
    await redis.client('KILL', 'USER', 'default', 'SKIPME', 'yes'); // every connection but this one
    await eventually(async () => {
      await lock.isLocked().catch(() => {}); // the next command finds the connection gone
      return c.metrics().reconnects > before;
    }, { what: 'a reconnect counted' });
  } finally {
    await c.close();
  }
});
