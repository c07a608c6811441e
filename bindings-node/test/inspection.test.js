'use strict';
// client.inspect() and client.scan(): what a name is, told from its keys, with its
// holders and their notes, waiters, permits or count; the names under a prefix.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { Client, InvalidArgumentError, WrongTypeError } = require('..');
const { eventually, useRedis } = require('./helpers');

let server;
let client;
// No holder notes: they would replace setHolderInfo's text once a hold lasts 1 s.
useRedis((env) => ({ server, client } = env), { holderNotes: 'off' });

test('every kind told, holders with notes, a waiter, and the names under a prefix', async () => {
  const lock = client.lock('ins:job');
  await lock.acquire();
  await lock.setHolderInfo('worker 7');
  assert.equal(await client.semaphore('ins:sem').trySetPermits(0), true);
  assert.equal(await client.countDownLatch('ins:ready').trySetCount(2), true);
  const other = await Client.connect(server.url);
  try {
    const waiting = other.lock('ins:job').acquire();
    await eventually(async () => (await client.inspect('ins:job')).waiters === 1, { what: 'the waiter to subscribe' });
    const seen = await client.inspect('ins:job');
    assert.equal(seen.kind, 'lock');
    assert.deepEqual(seen.holders, [{
      owner: lock.owner, count: 1, info: 'worker 7', app: null, host: null, pid: null, thread: null, command: null,
      renewed: null, since: null, heldForMs: null, description: 'worker 7',
    }]);
    assert.ok(seen.leaseLeftMs > 0 && seen.leaseLeftMs <= 30_000, `lease left ${seen.leaseLeftMs}`);
    assert.equal(seen.lastToken, null);
    assert.deepEqual(await client.scan('ins:'), ['ins:job', 'ins:ready', 'ins:sem']);
    await lock.release();
    const second = await waiting;
    await second.release();
  } finally {
    await other.close();
  }
  assert.deepEqual(await client.inspect('ins:sem'), {
    name: 'ins:sem',
    kind: 'semaphore',
    holders: [],
    leaseLeftMs: null,
    waiters: 0,
    queue: [],
    mode: null,
    permits: 0,
    permitsOut: [],
    count: null,
    lastToken: null,
    evictionPolicy: null,
  });
  assert.equal((await client.inspect('ins:ready')).kind, 'semaphore_or_latch');
  const latch = await client.inspect('ins:ready', 'count_down_latch');
  assert.equal(latch.kind, 'count_down_latch');
  assert.equal(latch.count, 2);
  await assert.rejects(client.inspect('ins:sem', 'fair_lock'), WrongTypeError);
  await assert.rejects(client.inspect('ins:sem', 'queue'), InvalidArgumentError);
  assert.deepEqual(await client.scan('nothing:'), []);
});
