'use strict';
// Closing a client renews what it has yet to release: a close that waits (for a call
// in flight) longer than the lease must not let its holds expire and report them
// lost. (The watchdog used to stop when the close began.)

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { Client } = require('..');
const { startFaultProxy, eventually, leftoverKeys, useRedis } = require('./helpers');

let server;
let redis;
useRedis((env) => ({ server, redis } = env), false);

const LEASE_MS = 600;
const HOLDS = 50;

test('close() waiting for a call in flight for 3 leases: its holds stay renewed, none is reported lost, all are released', { timeout: 60_000 }, async () => {
  const proxy = await startFaultProxy(server.port);
  try {
    // The acquire goes on the host link, renewals on core's own connection: delaying
    // the acquire's reply holds up the close, not the renewals.
    const client = await Client.connect(proxy.url, { watchdogTimeoutMs: LEASE_MS, responseTimeoutMs: 5000 });
    const locks = Array.from({ length: HOLDS }, (_, i) => client.lock(`close:held:${i}`));
    const lost = [];
    for (const lock of locks) lock.on('lost', (err) => lost.push(err.reason));
    await Promise.all(locks.map((lock) => lock.acquire()));
    await proxy.send(`delay-next-reply-to close:in-flight ${LEASE_MS * 3}`);
    // With a lease of its own that outlives the delay: its late reply is no loss.
    const inFlight = client.lock('close:in-flight').acquire({ leaseMs: 30_000 }).then(() => 'acquired', (e) => e.code);
    await eventually(async () => (await redis.exists('close:in-flight')) === 1, { what: 'the acquire ran on the server' });
    await client.close();
    assert.ok(['acquired', 'ERR_CLIENT_CLOSED'].includes(await inFlight), 'the acquire in flight settled');
    const metrics = client.metrics();
    assert.equal(metrics.losses, 0, `holds reported lost by the close (first: ${lost[0]})`);
    assert.deepEqual(locks.filter((lock) => lock.lost).map((lock) => lock.name), []);
    assert.deepEqual(lost, []);
    assert.equal(metrics.holdsNow, 0);
    assert.deepEqual(await leftoverKeys(redis), [], 'every hold released');
  } finally {
    await proxy.stop();
  }
});
