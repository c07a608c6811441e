'use strict';
// Explicit leases after the acquire: extend (add or replace), reacquire (back to the
// lease the hold was taken with), and the holder info shown by status().

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { once } = require('node:events');
const {
  Client, redlock, ArgumentTypeError, InvalidArgumentError, LockLostError, NotOwnerError,
} = require('..');
const { eventually, within, useRedis } = require('./helpers');

let server;
let redis;
let client;
// No holder notes: they would replace setHolderInfo's text once a hold lasts 1 s.
useRedis((env) => ({ server, redis, client } = env), { watchdogTimeoutMs: 3000, holderNotes: 'off' });

test('extend adds to the lease, { replace: true } sets it, reacquire resets it; the server agrees', async () => {
  const lock = client.lock('lease:extend');
  const hold = await lock.acquire({ leaseMs: 2000 });
  const extended = await lock.extend(5000);
  assert.ok(extended > 5000 && extended <= 7000, `extended to ${extended} ms`); // 2000 left, less the time since
  let pttl = await redis.pttl('lease:extend');
  assert.ok(pttl > 4000 && pttl <= extended, `pttl ${pttl}`);

  const replaced = await lock.extend(10_000, { replace: true });
  assert.equal(replaced, 10_000);
  pttl = await redis.pttl('lease:extend');
  assert.ok(pttl > 9000 && pttl <= 10_000, `pttl ${pttl}`);

  assert.equal(await lock.reacquire(), 2000);
  pttl = await redis.pttl('lease:extend');
  assert.ok(pttl > 1000 && pttl <= 2000, `pttl ${pttl}`);

  // Through the hold too, until it is released.
  const viaHold = await hold.extend(1000);
  assert.ok(viaHold > 1000 && viaHold <= 3000, `${viaHold}`);
  await hold.release();
  await assert.rejects(hold.extend(1000), (e) => e instanceof NotOwnerError && /was released/.test(e.message));
  assert.equal(await lock.isLocked(), false);
});

test('an extended hold outlives its first lease: not lost, still held', async () => {
  const lock = client.lock('lease:outlive');
  let lost = false;
  lock.on('lost', () => { lost = true; });
  await lock.acquire({ leaseMs: 400 });
  await lock.extend(3000);
  // Until the server shows that the first lease (400 ms) is long over.
  await eventually(async () => (await redis.pttl('lease:outlive')) < 2500, { what: 'more than 500 ms gone' });
  assert.equal(lost, false);
  assert.equal(lock.lost, false);
  assert.equal(await lock.isHeld(), true);
  await lock.release();
});

test('refusals: not held (NotOwnerError), renewed by the watchdog (InvalidArgumentError), lost (LockLostError), bad ms', async () => {
  const lock = client.lock('lease:refuse');
  await assert.rejects(lock.extend(1000), NotOwnerError);
  await assert.rejects(lock.reacquire(), NotOwnerError);

  await lock.acquire(); // watchdog lease
  await assert.rejects(lock.extend(1000), (e) => e instanceof InvalidArgumentError && !(e instanceof TypeError));
  await assert.rejects(lock.reacquire(), InvalidArgumentError);
  await assert.rejects(client.lock('lease:refuse').extend(1000), NotOwnerError, 'another holder');
  await lock.release();

  await assert.rejects(lock.extend('1000'), ArgumentTypeError);
  await assert.rejects(lock.extend(), ArgumentTypeError);
  await assert.rejects(lock.extend(1000, { replaceTtl: true }), (e) => e instanceof ArgumentTypeError && /valid options: replace$/.test(e.message));
  await assert.rejects(lock.extend(1000, { replace: 'yes' }), ArgumentTypeError);

  await lock.acquire({ leaseMs: 5000 });
  await assert.rejects(lock.extend(-1), InvalidArgumentError);
  await assert.rejects(lock.extend(8 * 24 * 3600 * 1000, { replace: true }), InvalidArgumentError);
  const lostEvent = once(lock, 'lost');
  await redis.del('lease:refuse'); // gone behind the holder's back
  await assert.rejects(lock.extend(1000), LockLostError);
  await within(lostEvent, 3000, "'lost' after a refused extend");
  assert.equal(lock.lost, true);
  await assert.rejects(lock.release(), LockLostError);
});

test('a multi-lock extends every member', async () => {
  const other = await Client.connect(server.url);
  try {
    const rl = redlock([client.lock('lease:rl:a'), other.lock('lease:rl:b')]);
    await rl.acquire({ leaseMs: 2000 });
    const left = await rl.extend(8000, { replace: true });
    assert.ok(left > 7000 && left <= 8000, `${left}`);
    for (const key of ['lease:rl:a', 'lease:rl:b']) {
      const pttl = await redis.pttl(key);
      assert.ok(pttl > 7000 && pttl <= 8000, `${key}: ${pttl}`);
    }
    await rl.release();
  } finally {
    await other.close();
  }
});

test('setHolderInfo: shown next to the holder in status(), removed with null; only by a holder', async () => {
  const lock = client.lock('lease:info');
  await assert.rejects(lock.setHolderInfo('x'), NotOwnerError);
  await assert.rejects(lock.setHolderInfo(42), ArgumentTypeError);
  await lock.acquire();
  await lock.setHolderInfo(`pid ${process.pid}`);
  assert.deepEqual((await lock.status()).holders.map(({ owner, count, info }) => ({ owner, count, info })), [{ owner: lock.owner, count: 1, info: `pid ${process.pid}` }]);
  await assert.rejects(lock.setHolderInfo('x'.repeat(1025)), InvalidArgumentError);
  await lock.setHolderInfo(null);
  assert.deepEqual((await lock.status()).holders.map(({ owner, count, info }) => ({ owner, count, info })), [{ owner: lock.owner, count: 1, info: null }]);
  await lock.release();
});
