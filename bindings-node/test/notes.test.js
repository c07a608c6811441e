'use strict';
// Who holds a lock (issue 31): holder notes (app, host, pid, label, since) in status()
// and inspect(); none with holderNotes 'off', none for a short hold by default; a
// timed-out acquire names the holder (NotAcquiredError.holder, lock.lastHolder()); a
// slow wait logs who is in the way through setLogger; the options' checks.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const os = require('node:os');
const { Client, setLogger, NotAcquiredError, InvalidArgumentError, ArgumentTypeError } = require('..');
const { eventually, useRedis } = require('./helpers');

let server;
let redis;
useRedis((env) => ({ server, redis } = env), false);

/** Calls of `command` the server has run (scripts' calls included). */
async function calls(command) {
  const info = await redis.info('commandstats');
  const m = new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(info);
  return m ? Number(m[1]) : 0;
}

/** A client for one test; closed by the caller. Short watchdog: its rounds write the notes. */
function connect(options) {
  return Client.connect(server.url, { watchdogTimeoutMs: 1500, ...options });
}

test('a long hold: its note (app, host, pid, label, since) in status(), inspect() and the description', async () => {
  const c = await connect({ appName: 'billing', holderNoteAfterMs: 200 });
  try {
    const lock = c.lock('notes:long', { label: 'worker-3' });
    assert.equal(lock.label, 'worker-3');
    await lock.acquire();
    const seen = await eventually(async () => (await lock.status()).holders.find((h) => h.app !== null), {
      timeoutMs: 10_000,
      what: 'the holder note',
    });
    assert.equal(seen.owner, lock.owner);
    assert.equal(seen.count, 1);
    assert.equal(seen.app, 'billing');
    assert.equal(seen.host, os.hostname());
    assert.equal(seen.pid, process.pid);
    assert.equal(seen.thread, 'worker-3');
    assert.equal(seen.command, null);
    assert.equal(seen.renewed, true);
    assert.equal(JSON.parse(seen.info).app, 'billing', 'info is the raw note');
    assert.ok(seen.heldForMs >= 150, `held for ${seen.heldForMs} ms by the server's clock`);
    assert.ok(Math.abs(seen.since + seen.heldForMs - Date.now()) < 60_000, `since ${seen.since}`);
    assert.match(seen.description, new RegExp(`^billing on .+ pid ${process.pid} \\(thread worker-3\\) for \\d+ (ms|s)$`));

    const inspected = (await c.inspect('notes:long')).holders;
    assert.equal(inspected.length, 1);
    assert.deepEqual(
      { ...inspected[0], heldForMs: null, description: null },
      { ...seen, heldForMs: null, description: null },
    );
    await lock.release();
  } finally {
    await c.close();
  }
});

test("holderNotes 'off' writes no note; the default writes none for a 1 ms hold (no TIME call)", async () => {
  const off = await connect({ holderNotes: 'off', holderNoteAfterMs: 0 });
  const quick = await connect();
  try {
    const lock = off.lock('notes:off');
    await lock.acquire();
    // Several watchdog rounds (1.5 s lease: renewed every 500 ms) pass without a note.
    const renewals = off.metrics().renewals;
    await eventually(() => off.metrics().renewals >= renewals + 3, { timeoutMs: 10_000, what: 'three renewals' });
    assert.deepEqual(await redis.keys('ferrolock_holder_info:{notes:off}*'), []);
    assert.deepEqual((await lock.status()).holders.map((h) => [h.info, h.app]), [[null, null]]);
    await lock.release();

    // (status() asks the server's TIME too: counted from here.)
    const before = await calls('time');
    const short = quick.lock('notes:quick');
    for (let i = 0; i < 20; i++) {
      await short.acquire();
      await short.release();
    }
    assert.equal(await calls('time'), before, 'only the notes script calls TIME');
    assert.deepEqual(await redis.keys('ferrolock_holder_info:{notes:quick}*'), []);
  } finally {
    await off.close();
    await quick.close();
  }
});

test('a timed-out acquire names the holder: NotAcquiredError.holder, lastHolder(); a plain try keeps nothing', async () => {
  const holderClient = await connect({ appName: 'billing', holderNoteAfterMs: 0, holderNotes: 'always' });
  const waiterClient = await connect();
  try {
    const held = holderClient.lock('notes:timeout');
    await held.acquire({ label: 'job-42' });
    const waiter = waiterClient.lock('notes:timeout');
    assert.equal(waiter.lastHolder(), null);
    assert.equal(await waiter.tryAcquire(), false);
    assert.equal(waiter.lastHolder(), null, 'a try without a wait reads nothing');

    const err = await waiter.acquire({ waitMs: 50 }).then(() => assert.fail('acquired'), (e) => e);
    assert.ok(err instanceof NotAcquiredError);
    assert.equal(err.holder.owner, held.owner);
    assert.equal(err.holder.app, 'billing');
    assert.equal(err.holder.pid, process.pid);
    assert.equal(err.holder.thread, 'job-42');
    assert.ok(err.message.includes(`held by ${err.holder.description}`), err.message);
    assert.match(err.holder.description, /^billing on .+ \(thread job-42\) for /);
    assert.deepEqual(waiter.lastHolder(), err.holder);

    // tryAcquire with a wait keeps it too.
    assert.equal(await waiter.tryAcquire({ waitMs: 20 }), false);
    assert.equal(waiter.lastHolder().thread, 'job-42');
    await held.release();
    await assert.rejects(held.acquire({ label: 7 }), ArgumentTypeError);
    assert.equal(held.label, 'job-42', 'a bad label changes nothing');
    assert.equal(await waiter.tryAcquire({ waitMs: 20 }), true);
    await waiter.release();
  } finally {
    await holderClient.close();
    await waiterClient.close();
  }
});

test('a slow wait logs at INFO who holds the lock, through setLogger', async () => {
  const records = [];
  setLogger((r) => records.push(r), { level: 'ferrolock=info' });
  const holderClient = await connect({ appName: 'billing', holderNotes: 'always' });
  const waiterClient = await connect({ slowWaitLogMs: 100 });
  try {
    const held = holderClient.lock('notes:slow', { label: 'worker-3' });
    await held.acquire();
    const waiting = waiterClient.lock('notes:slow').acquire({ waitMs: 60_000 });
    const line = await eventually(
      () => records.find((r) => r.level === 'INFO' && r.message.startsWith('waiting ') && r.message.includes('"notes:slow"')),
      { timeoutMs: 10_000, what: 'the slow-wait line' },
    );
    assert.equal(line.target, 'ferrolock::lock::slow_wait');
    assert.match(line.message, /^waiting \d+ ms for lock "notes:slow": held by billing on .+ pid \d+ \(thread worker-3\) for .+; lease [\d.]+ s left; \d+ client\(s\) waiting$/);
    await held.release();
    await (await waiting).release();
  } finally {
    setLogger(null);
    await holderClient.close();
    await waiterClient.close();
  }
});

test('bad option values give typed errors', async () => {
  await assert.rejects(connect({ holderNotes: 'sometimes' }), (e) => e instanceof InvalidArgumentError && /holderNotes = "sometimes"; give 'off', 'long'/.test(e.message));
  await assert.rejects(connect({ holderNotes: true }), ArgumentTypeError);
  await assert.rejects(connect({ holderNoteAfterMs: -1 }), (e) => e instanceof InvalidArgumentError && /holderNoteAfterMs = -1 ms is negative/.test(e.message));
  await assert.rejects(connect({ holderNoteAfterMs: '5' }), ArgumentTypeError);
  await assert.rejects(connect({ slowWaitLogMs: 0 }), (e) => e instanceof InvalidArgumentError && /slowWaitLogMs = 0; give at least 1 ms, or false/.test(e.message));
  await assert.rejects(connect({ slowWaitLogMs: -5 }), InvalidArgumentError);
  await assert.rejects(connect({ slowWaitLogMs: true }), ArgumentTypeError);
  const c = await connect({ slowWaitLogMs: false, holderNotes: 'long', holderNoteAfterMs: 0 });
  try {
    assert.throws(() => c.lock('notes:bad', { label: 42 }), ArgumentTypeError);
    assert.throws(() => c.lock('notes:bad', { label: 'x'.repeat(601) }), InvalidArgumentError);
    const lock = c.lock('notes:bad');
    assert.equal(lock.label, null);
    await assert.rejects(lock.acquire({ label: 'x'.repeat(601) }), InvalidArgumentError);
    assert.equal(await lock.tryAcquire({ label: 'ok' }), true);
    assert.equal(lock.label, 'ok');
    await lock.acquire({ label: null });
    assert.equal(lock.label, null);
    await lock.releaseAll();
  } finally {
    await c.close();
  }
});
