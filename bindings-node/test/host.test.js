'use strict';
// The host connection (lib/host.js, src/executor.rs, core's transport/host.rs):
// calls made on the JS thread send on a socket of this thread's event loop; when
// it dies or stalls, calls settle exactly once through core's own connection, and
// a new one comes.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { Client } = require('..');
const { eventually, within, useRedis } = require('./helpers');

let server;
let redis;
useRedis((env) => ({ server, redis } = env), false);

/** CLIENT LIST entries (as objects) of the connections named by `client`. */
async function named(client) {
  const list = await redis.client('LIST');
  return list.trim().split('\n')
    .map((line) => Object.fromEntries(line.split(' ').map((f) => f.split('=')).map(([k, ...v]) => [k, v.join('=')])))
    .filter((c) => c.name === `ferrolock:${client.id}`);
}

/**
 * The id of `client`'s own (core's) connection: a call made right after connect, in
 * the same tick, goes there (the host connection's socket has not even connected).
 */
async function coreConnection(client, lock) {
  await lock.isLocked(); // a PTTL
  const pttl = (await named(client)).filter((c) => c.cmd === 'pttl');
  assert.equal(pttl.length, 1, JSON.stringify(pttl));
  return pttl[0].id;
}

/** The id of `client`'s host connection, once calls use it (its handshake answered). */
async function hostConnection(client, lock, core) {
  return eventually(async () => {
    await lock.isLocked();
    const host = (await named(client)).find((c) => c.cmd === 'pttl' && c.id !== core);
    return host && host.id;
  }, { what: 'a host connection that takes calls' });
}

test('calls made on the JS thread send on the host connection', async () => {
  const client = await Client.connect(server.url);
  try {
    const lock = client.lock('host:calls');
    const id = await hostConnection(client, lock, await coreConnection(client, lock));
    const hold = await lock.acquire();
    let conns = await named(client);
    assert.equal(conns.find((c) => c.id === id)?.cmd, 'evalsha', JSON.stringify(conns));
    await hold.release();
    conns = await named(client);
    assert.equal(conns.find((c) => c.id === id)?.cmd, 'evalsha');
    // Core's own connection (made for background work such as deleting unlock
    // latches) ran no script.
    assert.ok(conns.filter((c) => c.id !== id).every((c) => c.cmd !== 'evalsha'), JSON.stringify(conns));
  } finally {
    await client.close();
  }
});

test('the unlock latches of releases made on the JS thread are deleted on the host connection, not by core\'s', async () => {
  const client = await Client.connect(server.url);
  try {
    const lock = client.lock('host:latches');
    const core = await coreConnection(client, lock);
    const id = await hostConnection(client, lock, core);
    // More than one batch (32): one UNLINK goes with the calls, the rest at the host's next check.
    for (let i = 0; i < 40; i++) await (await lock.acquire()).release();
    await eventually(async () => (await redis.keys('redisson_unlock_latch:*')).length === 0, { what: 'every latch deleted' });
    const conns = await named(client);
    assert.equal(conns.find((c) => c.id === core)?.cmd, 'pttl', `core's connection sent nothing since: ${JSON.stringify(conns)}`);
    assert.ok(conns.some((c) => c.id === id), 'the host connection is still up');
  } finally {
    await client.close();
  }
});

test('a host connection killed under a call: the call settles once on core\'s connection, and a new one comes', async () => {
  const client = await Client.connect(server.url);
  try {
    const lock = client.lock('host:killed');
    const core = await coreConnection(client, lock);
    const id = await hostConnection(client, lock, core);
    await redis.client('PAUSE', 5000, 'WRITE'); // the acquire's script waits on the server
    const acquired = lock.acquire();
    await eventually(async () => (await named(client)).find((c) => c.id === id)?.cmd === 'evalsha' || await blocked(id),
      { what: 'the acquire waiting on the server' });
    await redis.client('KILL', 'ID', id);
    await redis.client('UNPAUSE');
    const hold = await within(acquired, 10_000, 'the acquire');
    assert.equal(hold.holdCount, 1);
    assert.equal(await redis.hget('host:killed', lock.owner), '1');
    const next = await eventually(async () => {
      const fresh = await hostConnection(client, lock, core);
      return fresh !== id && fresh;
    }, { what: 'a new host connection' });
    assert.notEqual(next, id);
    await hold.release();
    assert.equal(await redis.exists('host:killed'), 0);
  } finally {
    await redis.client('UNPAUSE');
    await client.close();
  }
});

/** True while connection `id` has a command waiting (paused clients show it in their query buffer). */
async function blocked(id) {
  const list = await redis.client('LIST');
  const line = list.split('\n').find((l) => l.startsWith(`id=${id} `));
  return !!line && /flags=\S*[bP]/.test(line) || /qbuf=[1-9]/.test(line || '');
}

test('a reply overdue past the response timeout closes the host connection; the call still settles once', async () => {
  const client = await Client.connect(server.url, { responseTimeoutMs: 300 });
  try {
    const lock = client.lock('host:overdue');
    const id = await hostConnection(client, lock, await coreConnection(client, lock));
    await redis.client('PAUSE', 1500, 'ALL'); // nothing answers for 1.5 s
    const hold = await within(lock.acquire(), 15_000, 'the acquire');
    assert.equal(hold.holdCount, 1);
    assert.equal(await redis.hget('host:overdue', lock.owner), '1');
    // The stalled connection was closed by us: it is gone from the server.
    await eventually(async () => !(await named(client)).some((c) => c.id === id), { what: 'the stalled connection gone' });
    await hold.release();
  } finally {
    await redis.client('UNPAUSE');
    await client.close();
  }
});
