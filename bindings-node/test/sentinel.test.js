'use strict';
// Redis Sentinel for real: a master, one replica and three sentinels (with a
// requirepass of their own), all started and killed by this file.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const util = require('node:util');
const ferrolock = require('..');
const { Client, ConnectionError, FerrolockError, NotReplicatedError } = ferrolock;
const { startSentinels, eventually, within, raw } = require('./helpers');

const SENTINEL_PASSWORD = 'sentinel-s3cret-pw';

let topo;
let master; // raw connections to the data nodes
let replica;
before(async () => {
  topo = await startSentinels({ password: SENTINEL_PASSWORD });
  master = raw(topo.master);
  replica = raw(topo.replica);
});
after(async () => {
  master?.disconnect();
  replica?.disconnect();
  await topo?.stop();
});

/** Runs `fn(client)` with a client on the sentinels, closing it afterwards. */
async function withClient(options, fn) {
  const client = await within(Client.connect(topo.url, { sentinelPassword: SENTINEL_PASSWORD, ...options }), 10_000, 'connect');
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}

/** Runs `fn()` with the replica stopped (SIGSTOP), continuing it afterwards whatever happens. */
async function withReplicaStopped(fn) {
  process.kill(topo.replica.proc.pid, 'SIGSTOP');
  try {
    return await fn();
  } finally {
    process.kill(topo.replica.proc.pid, 'SIGCONT');
  }
}

test('redis+sentinel://: acquires on the master the sentinels name, and releases', async () => {
  await withClient({ sentinelUsername: 'default' }, async (client) => {
    assert.ok(!util.inspect(client, { showHidden: true, depth: Infinity }).includes(SENTINEL_PASSWORD));
    const lock = client.lock('sentinel:basic');
    const hold = await lock.acquire();
    assert.equal(await lock.isHeld(), true);
    assert.equal(await master.exists('sentinel:basic'), 1, 'the lock is on the master');
    // replicaAck (default on): the acquire resolved only once the replica acknowledged it.
    assert.equal(await replica.exists('sentinel:basic'), 1, 'the replica has the lock when acquire resolves');
    await hold.release();
    assert.equal(await master.exists('sentinel:basic'), 0);
    assert.equal(await lock.tryAcquire(), true);
    await lock.release();
  });
});

test("sentinelPassword is the sentinels' own: missing or wrong rejects with ConnectionError, never echoed", async () => {
  const conn = (secret) => (e) => {
    assert.ok(e instanceof ConnectionError, `not a ConnectionError: ${e && e.stack}`);
    assert.equal(e.code, 'ERR_CONNECTION');
    assert.ok(!util.inspect(e).includes(secret), e.message);
    return true;
  };
  await assert.rejects(within(Client.connect(topo.url, { connectTimeoutMs: 1000 }), 10_000, 'connect'), conn(SENTINEL_PASSWORD));
  const wrong = 'wrong-sentinel-pw-123';
  await assert.rejects(
    within(Client.connect(topo.url, { sentinelPassword: wrong, connectTimeoutMs: 1000 }), 10_000, 'connect'),
    conn(wrong),
  );
  // A password in the URL is the data nodes' (who have none here): not echoed either.
  const url = topo.url.replace('redis+sentinel://', `redis+sentinel://:${SENTINEL_PASSWORD}@`);
  await assert.rejects(within(Client.connect(url, { connectTimeoutMs: 1000 }), 10_000, 'connect'), conn(SENTINEL_PASSWORD));
});

test('replicaAck: no replica acknowledges -> NotReplicatedError, the acquire undone; replicaAck: false acquires', async () => {
  const name = 'sentinel:not-replicated';
  await withReplicaStopped(async () => {
    await withClient({ replicaAckTimeoutMs: 200 }, async (client) => {
      const lock = client.lock(name);
      await assert.rejects(within(lock.acquire(), 10_000, 'acquire'), (e) => {
        assert.ok(e instanceof NotReplicatedError, `not a NotReplicatedError: ${e && e.stack}`);
        assert.ok(e instanceof FerrolockError);
        assert.equal(e.code, 'ERR_NOT_REPLICATED');
        assert.equal(e.name, 'NotReplicatedError');
        assert.match(e.message, /sentinel:not-replicated/);
        assert.match(e.message, /\b200 ?ms\b/, 'replicaAckTimeoutMs reached the core');
        assert.ok(!e.message.includes(SENTINEL_PASSWORD));
        return true;
      });
      // The undo runs in the background: wait for the state, not for a time.
      await eventually(async () => (await master.exists(name)) === 0, { what: 'the undone lock key to be gone on the master' });
      assert.equal(await lock.isHeld(), false);
      assert.equal(client.heldCount(), 0);
      await assert.rejects(within(lock.tryAcquire(), 10_000, 'tryAcquire'), NotReplicatedError);
      await eventually(async () => (await master.exists(name)) === 0, { what: 'the lock key to be gone again' });
    });

    await withClient({ replicaAck: false }, async (client) => {
      const lock = client.lock(name);
      const hold = await within(lock.acquire(), 10_000, 'acquire without replicaAck');
      assert.equal(await master.exists(name), 1);
      await hold.release();
      assert.equal(await master.exists(name), 0);
    });
  });
});
