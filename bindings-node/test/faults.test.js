'use strict';
// Network and process faults through tests/harness's fault-proxy (issue 29 item 5):
// the client talks to Redis through the proxy, both over the host link (the event
// loop's socket) and core's own connections; the test looks at Redis directly.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { once } = require('node:events');
const readline = require('node:readline');
const { Client, FerrolockError, LockLostError } = require('..');
const { startRedis, startFaultProxy, eventually, within, raw, leftoverKeys } = require('./helpers');

const fixtures = path.join(__dirname, 'fixtures');

let server;
let redis;
before(async () => {
  server = await startRedis();
  redis = raw(server);
});
after(async () => {
  redis?.disconnect();
  await server?.stop();
});

/** Runs `fn(proxy)` with a fault proxy in front of `upstream` (the file's server by default). */
async function withProxy(fn, upstream = server) {
  const proxy = await startFaultProxy(upstream.port);
  try {
    return await fn(proxy);
  } finally {
    await proxy.stop();
  }
}

/** Settles `promise` into { value } or { error }. */
function settle(promise) {
  return promise.then((value) => ({ value }), (error) => ({ error }));
}

/** The owner fields of lock `name`, as { owner: count }. */
async function fields(name) {
  return redis.hgetall(name);
}

/** Script calls the server ran so far (INFO commandstats). */
async function scriptCalls() {
  const info = await redis.info('commandstats');
  return [...info.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
}

/** The unlock latch of releases of `name`: a release request carries it, an acquire does not. */
const releaseMarker = (name) => `redisson_unlock_latch:{${name}}`;

test('kill -9 of a holder mid-section: another client gets the lock when its lease ends, never before', async () => {
  const name = 'faults:killed';
  const child = spawn(process.execPath, [path.join(fixtures, 'fault-holder.js'), server.url, name, '2000'],
    { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = once(child, 'exit');
  const other = await Client.connect(server.url);
  try {
    const [line] = await within(once(readline.createInterface({ input: child.stdout }), 'line'), 15_000, 'the child holding');
    const owner = /^held (\S+)$/.exec(line)?.[1];
    assert.ok(owner, line);
    const lock = other.lock(name);
    assert.equal(await lock.tryAcquire({ waitMs: 0 }), false, 'held by the child');
    const waiting = settle(lock.acquire({ waitMs: 15_000 }));
    await eventually(() => other.metrics().waitersNow === 1, { what: 'the other client waiting' });
    child.kill('SIGKILL');
    await exited;
    // From here only the lease can end the child's hold.
    const pttl = await redis.pttl(name);
    const dead = performance.now();
    assert.ok(pttl > 0, `still held by the dead child (pttl ${pttl})`);
    assert.deepEqual(await fields(name), { [owner]: '1' });
    const { value: hold, error } = await within(waiting, 15_000, 'the acquire after the kill');
    assert.ifError(error);
    const after = performance.now() - dead;
    assert.ok(after >= pttl - 50, `acquired ${after.toFixed(0)} ms after the kill, with ${pttl} ms of lease left`);
    assert.deepEqual(await fields(name), { [lock.owner]: '1' }, 'only the new holder');
    await hold.release();
    assert.equal(await redis.exists(name), 0);
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await other.close();
  }
});

test('a blackholed holder is told of its loss before another client acquires; its late renewals change nothing', async () => {
  await withProxy(async (proxy) => {
    const name = 'faults:blackholed';
    // A 1 s lease, counted as lost 20 % early: the margin covers the event loop's delay.
    const a = await Client.connect(proxy.url, { watchdogTimeoutMs: 1000, driftFactor: 0.2 });
    const b = await Client.connect(server.url);
    try {
      const held = a.lock(name);
      const hold = await held.acquire();
      const lost = once(held, 'lost').then(([err]) => ({ err, at: performance.now() }));
      await proxy.send('blackhole on');
      const cutAt = performance.now();
      // Each attempt's send time: the winning one's is no later than Redis granting it.
      const other = b.lock(name);
      let sent;
      for (;;) {
        sent = performance.now();
        if (await other.tryAcquire({ waitMs: 0, leaseMs: 5000 })) break;
        assert.ok(performance.now() - cutAt < 5000, 'the other client got in eventually');
      }
      const { err, at } = await within(lost, 5000, "the 'lost' event");
      assert.ok(err instanceof LockLostError);
      assert.ok(at < sent, `told ${(at - sent).toFixed(1)} ms after the other client's winning attempt was sent`);
      assert.equal(hold.lost, true);
      const calls = await scriptCalls();
      await proxy.send('blackhole off');
      await eventually(async () => (await scriptCalls()) > calls, { what: 'the late renewals reaching Redis' });
      assert.deepEqual(await fields(name), { [other.owner]: '1' }, 'only the new holder');
      assert.ok(await redis.pttl(name) > 1000, "the late renewals did not touch the new holder's lease");
      await other.release();
      await assert.rejects(hold.release(), { code: 'ERR_LOCK_LOST' });
    } finally {
      await a.close();
      await b.close();
    }
  });
});

test('a hold over a link slower than the response timeout is kept: renewals wait up to a lease', async () => {
  // 250 ms each way against a 300 ms response timeout and a 1.5 s lease: requests on
  // the renewals' connection that time out (holder notes, written once a hold lasts a
  // second) used to retire it, and the next renewal waited for a new connection's
  // set-up: holds were told lost about 2 s in.
  await withProxy(async (proxy) => {
    const name = 'faults:slow-link';
    const c = await Client.connect(proxy.url, { watchdogTimeoutMs: 1500, responseTimeoutMs: 300 });
    try {
      const lock = c.lock(name);
      const lost = [];
      lock.on('lost', (err) => lost.push(err.message));
      const hold = await lock.acquire();
      await proxy.send('delay 250');
      const until = performance.now() + 6000;
      while (performance.now() < until) {
        assert.deepEqual(await fields(name), { [lock.owner]: '1' }, 'the hold left the server over the slow link');
        assert.ok(await redis.pttl(name) > 0);
        assert.deepEqual(lost, [], 'told lost over the slow link');
        assert.equal(hold.lost, false);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      await proxy.send('delay 0');
      await hold.release();
      assert.deepEqual(lost, []);
      assert.equal(await redis.exists(name), 0);
    } finally {
      await c.close();
    }
  });
});

test('an acquire reply delayed past the response timeout: read back, one field, released cleanly', async () => {
  await withProxy(async (proxy) => {
    const c = await Client.connect(proxy.url, { responseTimeoutMs: 1000 });
    const other = await Client.connect(server.url);
    try {
      for (const [i, opts] of [{}, { waitMs: 0 }, { waitMs: 3000 }].entries()) {
        const name = `faults:delayed:${i}`;
        const lock = c.lock(name);
        await proxy.send(`delay-next-reply-to ${name} 4000`);
        const t0 = performance.now();
        const hold = await within(lock.acquire(opts), 10_000, 'the acquire');
        assert.ok(performance.now() - t0 < 3500, `settled by a read-back, not by the delayed reply (${(performance.now() - t0).toFixed(0)} ms)`);
        assert.equal(hold.holdCount, 1);
        assert.deepEqual(await fields(name), { [lock.owner]: '1' });
        assert.equal(await other.lock(name).tryAcquire({ waitMs: 0 }), false);
        await hold.release();
        assert.equal(await redis.exists(name), 0, 'released: nothing left behind');
      }
    } finally {
      await c.close();
      await other.close();
    }
  });
});

test('an acquire whose outcome stays unknown is undone in the background: no orphan field', async () => {
  await withProxy(async (proxy) => {
    const name = 'faults:unknown';
    const c = await Client.connect(proxy.url, { responseTimeoutMs: 1000, connectTimeoutMs: 1000 });
    const other = await Client.connect(server.url);
    try {
      const lock = c.lock(name);
      await proxy.send(`delay-next-reply-to ${name} 6000`);
      const attempt = settle(lock.acquire({ waitMs: 3000 }));
      // Once the script ran, cut the link so that no read-back can answer either.
      await eventually(async () => (await redis.hget(name, lock.owner)) === '1', { what: 'the acquire run on Redis' });
      await proxy.send('blackhole on');
      const { error } = await within(attempt, 15_000, 'the acquire');
      await proxy.send('blackhole off');
      assert.ok(error instanceof FerrolockError, `the caller was told it did not get it: ${error}`);
      assert.equal(error.code, 'ERR_CONNECTION', error.message);
      assert.equal(c.metrics().holdsNow, 0);
      // Redis agrees once it answers, long before the 30 s lease: freed, and another client gets it.
      await eventually(async () => (await redis.exists(name)) === 0, { timeoutMs: 10_000, what: 'the unknown acquisition undone' });
      const got = other.lock(name);
      assert.equal(await got.tryAcquire({ waitMs: 5000 }), true);
      await got.release();
    } finally {
      await proxy.send('blackhole off');
      await c.close();
      await other.close();
    }
  });
});

test('a dropped release reply: the retry reports the release, no loss, nothing left', async () => {
  await withProxy(async (proxy) => {
    const name = 'faults:dropped-release';
    const c = await Client.connect(proxy.url);
    const other = await Client.connect(server.url);
    try {
      const lock = c.lock(name);
      let losses = 0;
      lock.on('lost', () => losses++);
      const hold = await lock.acquire();
      await proxy.send(`cut-next-reply-to ${releaseMarker(name)}`);
      await within(hold.release(), 10_000, 'the release');
      assert.equal(await proxy.count('cuts'), 1, 'the reply was cut');
      assert.equal(await redis.exists(name), 0);
      assert.equal(await other.lock(name).tryAcquire({ waitMs: 0 }), true, 'free at once');
      assert.equal(losses + c.metrics().losses, 0);
      assert.equal(hold.lost, false);
      await eventually(async () => (await leftoverKeys(redis)).every((k) => k === name), { what: 'the unlock latch deleted' });
    } finally {
      await c.close();
      await other.close();
    }
  });
});

// Issue 29 items 1-2: a release's reply lost, then Redis unreachable for longer than
// the retry window (the unlock latch's TTL).
const outage = { responseTimeoutMs: 500, connectTimeoutMs: 500, retryWindowMs: 1000, watchdogTimeoutMs: 10_000 };

/** Cuts the reply of `name`'s next release, then holds all traffic until `settled` resolves. */
async function releaseInLongOutage(proxy, name, release) {
  await proxy.send(`cut-next-reply-to ${releaseMarker(name)}`);
  const released = settle(release());
  await eventually(async () => (await proxy.count('cuts')) === 1, { what: 'the release reply cut' });
  await proxy.send('blackhole on');
  // Down until the release gave up: longer than the retry window by construction.
  const result = await within(released, 15_000, 'the release in the outage');
  await proxy.send('blackhole off');
  return { result, healedAt: performance.now() };
}

test('long outage, plain release: it took effect, and nobody is told a loss or that it is still held', async () => {
  await withProxy(async (proxy) => {
    const name = 'faults:outage-plain';
    const c = await Client.connect(proxy.url, outage);
    try {
      const lock = c.lock(name);
      const losses = [];
      lock.on('lost', (e) => losses.push(e));
      const hold = await lock.acquire();
      const { result } = await releaseInLongOutage(proxy, name, () => hold.release());
      assert.equal(await redis.exists(name), 0, 'Redis ran the release');
      if (result.error) {
        const e = result.error;
        assert.ok(e instanceof FerrolockError, String(e));
        assert.notEqual(e.code, 'ERR_LOCK_LOST', e.message);
        assert.doesNotMatch(e.message, /still held|release (it )?again/i, 'does not claim the level is still held');
      }
      // Whatever it said, the client stops counting the level as held once Redis answers...
      await eventually(() => c.metrics().holdsNow === 0, { timeoutMs: 3000, what: 'the client to stop counting the released level as held' });
      // ...and a second release (the advice to a caller told it is still held) reports no loss.
      for (const again of [await settle(hold.release()), await settle(lock.release())]) {
        assert.notEqual(again.error?.code, 'ERR_LOCK_LOST', again.error?.message);
      }
      // The client works again; a fresh hold and release, then no loss was told at all.
      await (await within(lock.acquire(), 10_000, 'a new acquire')).release();
      assert.equal(hold.lost, false, 'the released hold is not reported lost');
      assert.deepEqual(losses.map((e) => e.message), []);
      assert.equal(c.metrics().losses, 0);
    } finally {
      await c.close();
    }
  });
});

test('long outage, release handing the lock to a waiter of the same client: no orphan field, others get it soon', async () => {
  await withProxy(async (proxy) => {
    const name = 'faults:outage-handoff';
    const c = await Client.connect(proxy.url, outage);
    const other = await Client.connect(server.url);
    try {
      const a = c.lock(name);
      const b = c.lock(name);
      const aHold = await a.acquire();
      // b waits; whatever it ends with, it gives the lock back at once.
      let bHold = null;
      const bDone = settle(b.acquire({ waitMs: 20_000 }).then(async (h) => {
        bHold = h;
        if (!h.lost) await settle(h.release());
        return h;
      }));
      await eventually(() => c.metrics().waitersNow === 1, { what: 'b waiting' });
      await eventually(async () => (await redis.pubsub('NUMSUB', `redisson_lock__channel:{${name}}`))[1] >= 1,
        { what: 'b subscribed' });
      const { healedAt } = await releaseInLongOutage(proxy, name, () => aHold.release());
      // Within 2 s of the heal nothing is left that no live hold accounts for.
      await eventually(async () => {
        const left = Object.keys(await fields(name));
        const live = bHold && !bHold.lost && c.metrics().holdsNow > 0 ? [b.owner] : [];
        return left.every((o) => live.includes(o));
      }, { timeoutMs: Math.max(1, 2000 - (performance.now() - healedAt)), what: 'no orphan field within 2 s of the heal' });
      // And another client acquires within 2.5 s of the heal.
      const waitMs = Math.max(0, Math.round(2500 - (performance.now() - healedAt)));
      const got = other.lock(name);
      assert.equal(await got.tryAcquire({ waitMs }), true, `another client acquired within 2.5 s of the heal (HGETALL ${JSON.stringify(await fields(name))})`);
      await got.release();
      await within(bDone, 15_000, "b's acquire");
    } finally {
      await proxy.send('blackhole off');
      await c.close();
      await other.close();
    }
  });
});

test('a Redis restart with waiters: they acquire when it is back, not at the holder\'s lease end', async () => {
  const own = await startRedis();
  try {
    await withProxy(async (proxy) => {
      const name = 'faults:restart';
      const holder = await Client.connect(own.url, { watchdogTimeoutMs: 20_000 });
      const waiter = await Client.connect(proxy.url);
      try {
        await holder.lock(name).acquire();
        const waits = Array.from({ length: 3 }, () => {
          const lock = waiter.lock(name);
          return lock.acquire({ waitMs: 15_000 }).then((h) => h.release());
        });
        await eventually(() => waiter.metrics().waitersNow === 3, { what: 'three waiters' });
        await own.stop();
        const restarted = performance.now();
        Object.assign(own, await startRedis([], { port: own.port }));
        await within(Promise.all(waits), 10_000, 'the waiters');
        assert.ok(performance.now() - restarted < 5000, `acquired ${(performance.now() - restarted).toFixed(0)} ms after the restart`);
        assert.equal(waiter.metrics().acquired, 3);
      } finally {
        await waiter.close();
        await holder.close();
      }
    }, own);
  } finally {
    await own.stop();
  }
});

test('a killed pub/sub connection: a waiter still wakes on the release', async () => {
  await withProxy(async (proxy) => {
    const name = 'faults:pubsub';
    const holder = await Client.connect(server.url);
    const waiter = await Client.connect(proxy.url);
    try {
      const held = holder.lock(name);
      await held.acquire();
      const waiting = waiter.lock(name).acquire({ waitMs: 20_000 });
      const subscriber = await eventually(async () => {
        const list = (await redis.client('LIST')).split('\n');
        return list.find((l) => l.includes(` name=ferrolock:${waiter.id}`) && /\bsub=[1-9]/.test(l))?.match(/^id=(\d+)/)?.[1];
      }, { what: "the waiter's subscription" });
      await redis.client('KILL', 'ID', subscriber);
      const released = performance.now();
      await held.release();
      const hold = await within(waiting, 10_000, 'the waiter');
      assert.ok(performance.now() - released < 5000, `woke ${(performance.now() - released).toFixed(0)} ms after the release (lease 30 s)`);
      await hold.release();
      assert.equal(await redis.exists(name), 0);
    } finally {
      await holder.close();
      await waiter.close();
    }
  });
});

test('replies cut into pieces at random points: every call still reads them right', async () => {
  await withProxy(async (proxy) => {
    const c = await Client.connect(proxy.url);
    try {
      await proxy.send('split on');
      const lock = c.lock('faults:split');
      const fenced = c.fencedLock('faults:split:fenced');
      const rival = c.lock('faults:split');
      let lastToken = 0n;
      for (let i = 0; i < 25; i++) {
        const hold = await lock.acquire();
        assert.equal(await lock.holdCount(), 1);
        assert.equal(await lock.isLocked(), true);
        assert.equal(await rival.tryAcquire({ waitMs: 0 }), false);
        const status = await lock.status();
        assert.ok(status.holders.some((h) => h.owner === lock.owner && h.count === 1), JSON.stringify(status, (k, v) => (typeof v === 'bigint' ? String(v) : v)));
        await hold.release();
        const f = await fenced.acquire();
        assert.ok(f.token > lastToken);
        lastToken = f.token;
        await f.release();
      }
      const split = await proxy.count('accepted');
      assert.ok(split >= 1);
      assert.deepEqual(await leftoverKeys(redis).then((k) => k.filter((n) => n.startsWith('faults:split'))), []);
    } finally {
      await proxy.send('split off');
      await c.close();
    }
  });
});

test('200 acquire/release promises on one client through resets, refusals and delays: all settle, counters exact, the process exits', async () => {
  await withProxy(async (proxy) => {
    const child = spawn(process.execPath, [path.join(fixtures, 'fault-storm.js'), proxy.url], { stdio: ['pipe', 'pipe', 'inherit'] });
    const exited = once(child, 'exit');
    let settled = 0;
    let report = null;
    let out = '';
    let exitAfterClose = null;
    const state = { started: false, all: false };
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      out += `${line}\n`;
      if (line === 'started') state.started = true;
      else if (line === 'all settled') state.all = true;
      else if (line.startsWith('settled ')) settled = Number(line.slice(8));
      else if (line.startsWith('report ')) report = JSON.parse(line.slice(7));
      else if (line.startsWith('exit ')) exitAfterClose = Number(/exit (\d+) ms/.exec(line)[1]);
    });
    try {
      await eventually(() => state.started || child.exitCode !== null, { timeoutMs: 15_000, what: 'the storm started' });
      // Each fault stays on until some more promises settled (or a few seconds went by,
      // when none can settle under it), then the next one.
      const progress = async (n, ms) => {
        const from = settled;
        await eventually(() => settled >= from + n || state.all || child.exitCode !== null, { timeoutMs: ms, what: 'progress' })
          .catch(() => {});
      };
      const faults = [
        ['delay 30'], ['reset'], ['refuse on', 'reset'], ['refuse off', 'delay 80'], ['reset'], ['delay 0', 'refuse on', 'reset'],
        ['refuse off', 'delay-next-reply-to storm 1500'], ['reset', 'delay 20'], ['delay 0'],
      ];
      for (const step of faults) {
        if (state.all) break;
        for (const line of step) await proxy.send(line);
        await progress(40, step.includes('refuse on') ? 1500 : 4000);
      }
      await proxy.send('refuse off');
      await proxy.send('delay 0');
      await eventually(() => state.all || child.exitCode !== null, { timeoutMs: 30_000, what: 'every promise settled' });
      child.stdin.write('close\n');
      const [code] = await within(exited, 20_000, 'the storm process exiting by itself after close');
      assert.equal(code, 0, out);
      assert.ok(report, out);
      const { results, metrics, waitMs, options } = report;
      assert.ok(results.length >= 200, `${results.length} rounds`);
      const acquireCodes = new Set(['ok', 'ERR_NOT_ACQUIRED', 'ERR_CONNECTION']);
      const releaseCodes = new Set(['ok', 'ERR_CONNECTION', 'ERR_LOCK_LOST']);
      // Bounds: the wait, plus a retry window and a connect and a response timeout or two.
      const slack = options.retryWindowMs + 2 * (options.connectTimeoutMs + options.responseTimeoutMs) + 2000;
      for (const r of results) {
        assert.ok(acquireCodes.has(r.acquire), `acquire settled with ${r.acquire}`);
        assert.ok(r.acquireMs < waitMs + slack, `an acquire took ${r.acquireMs.toFixed(0)} ms`);
        if (r.acquire === 'ok') {
          assert.ok(releaseCodes.has(r.release), `release settled with ${r.release}`);
          assert.ok(r.releaseMs < slack, `a release took ${r.releaseMs.toFixed(0)} ms`);
        }
      }
      const count = (k, v) => results.filter((r) => r[k] === v).length;
      const acquired = count('acquire', 'ok');
      assert.equal(metrics.acquired, acquired);
      assert.equal(metrics.notAcquired, count('acquire', 'ERR_NOT_ACQUIRED'));
      assert.equal(metrics.failed, count('acquire', 'ERR_CONNECTION'));
      assert.equal(metrics.cancelled, 0);
      assert.equal(metrics.waitersNow, 0);
      // A release that failed with ERR_CONNECTION leaves the level held (until close(),
      // or until it is lost); every loss is told once, as a 'lost' event.
      assert.equal(metrics.holdsNow, report.stillHeld);
      assert.ok(report.stillHeld <= count('release', 'ERR_CONNECTION'));
      assert.equal(metrics.losses, report.lostEvents);
      assert.ok(acquired > 0, 'some got through');
      assert.ok(exitAfterClose !== null && exitAfterClose < 2000, `exited ${exitAfterClose} ms after close()`);
      await eventually(async () => (await leftoverKeys(redis)).filter((k) => /storm/.test(k)).length === 0,
        { timeoutMs: 5000, what: 'nothing left in Redis' });
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
