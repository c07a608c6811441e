'use strict';
// lock.status(): the lock as the server sees it (holders, counts, lease left,
// subscribed clients, last fencing token), as `ferrolock status` shows it.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { Client, redlock, InvalidArgumentError, WrongTypeError } = require('..');
const { eventually, startRedis, useRedis } = require('./helpers');

/** A holder's owner field, count and raw note (test/notes.test.js checks the rest). */
const brief = ({ owner, count, info }) => ({ owner, count, info });

let server;
let redis;
let client;
// No notes: holders whose note fields are all null, however long a test holds.
useRedis((env) => ({ server, redis, client } = env), { holderNotes: 'off' });

test('a free lock: no holders, no lease, no subscribers, no token', async () => {
  assert.deepEqual(await client.lock('status:free').status(), {
    name: 'status:free',
    holders: [],
    remainingLeaseMs: null,
    subscribers: 0,
    lastToken: null,
    evictionPolicy: null,
  });
});

test('held: the holder with its count, the lease left, a waiting client, the last token', async () => {
  const lock = client.fencedLock('status:held');
  await lock.acquire({ leaseMs: 20_000 });
  const second = await lock.acquire({ leaseMs: 20_000 });
  const other = await Client.connect(server.url);
  try {
    const waiting = other.fencedLock('status:held').acquire();
    await eventually(() => other.subscribedChannels() === 1, { what: 'the other client waiting' });
    const s = await other.fencedLock('status:held').status(); // anyone can ask
    assert.equal(s.name, 'status:held');
    assert.deepEqual(s.holders.map(brief), [{ owner: lock.owner, count: 2, info: null }]);
    assert.ok(s.remainingLeaseMs > 15_000 && s.remainingLeaseMs <= 20_000, `lease left ${s.remainingLeaseMs}`);
    assert.equal(s.subscribers, 1, 'one subscription: the waiting client');
    assert.equal(typeof s.lastToken, 'bigint');
    assert.equal(s.lastToken, second.token);
    assert.equal(s.lastToken, BigInt(await redis.get('redisson_lock_token:{status:held}')));
    await lock.releaseAll();
    const hold = await waiting;
    assert.deepEqual((await lock.status()).holders.map((h) => h.owner), [hold.lock.owner]);
    assert.equal((await lock.status()).lastToken, hold.token);
    await hold.release();
  } finally {
    await other.close();
  }
});

test('a lock without expiry reports Infinity; a key that is not a lock, WrongTypeError; a multi-lock, InvalidArgumentError', async () => {
  await redis.hset('status:forever', 'redisson-uuid:1', '3');
  assert.deepEqual((await client.lock('status:forever').status()).holders.map(brief), [{ owner: 'redisson-uuid:1', count: 3, info: null }]);
  assert.equal((await client.lock('status:forever').status()).remainingLeaseMs, Infinity);
  await redis.del('status:forever');
  await redis.set('status:string', 'x');
  await assert.rejects(client.lock('status:string').status(), WrongTypeError);
  await redis.del('status:string');
  await assert.rejects(redlock([client.lock('status:rl')]).status(), InvalidArgumentError);
});

test('a server that may evict lock keys (maxmemory, a policy but noeviction): status and inspect name the policy', async () => {
  const evicting = await startRedis(['--maxmemory', '1gb', '--maxmemory-policy', 'allkeys-lru']);
  const c = await Client.connect(evicting.url);
  try {
    assert.equal((await c.lock('status:ev').status()).evictionPolicy, 'allkeys-lru');
    assert.equal((await c.inspect('status:ev')).evictionPolicy, 'allkeys-lru');
  } finally {
    await c.close();
    await evicting.stop();
  }
});
