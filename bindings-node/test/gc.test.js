'use strict';
// Holds never end by garbage collection: a lock object that holds stays reachable
// from its client (and its 'lost' events still reach it) until the hold ends by
// release, loss, lease end or client.close(); then it is collectable again.
//
// Needs gc(): test.sh runs node with --expose-gc; without it the flag is set here.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { once } = require('node:events');
const v8 = require('node:v8');
const vm = require('node:vm');
const { setImmediate: tick } = require('node:timers/promises');
const { Client, LockLostError } = require('..');
const { eventually, within, useRedis } = require('./helpers');

const gc = typeof global.gc === 'function'
  ? global.gc
  : (v8.setFlagsFromString('--expose-gc'), vm.runInNewContext('gc'));

let server;
let redis;
useRedis((env) => ({ server, redis } = env), false);

/** Full collections, each after a turn of the event loop (WeakRef targets read in a job stay alive until it ends). */
async function collect(rounds = 4) {
  for (let i = 0; i < rounds; i++) {
    await tick();
    gc();
  }
  await tick(); // lets FinalizationRegistry callbacks run
}

test('a temporary lock object that holds keeps its hold through gc, until client.close()', async () => {
  const a = await Client.connect(server.url);
  const b = await Client.connect(server.url);
  try {
    let ran = false;
    let ref;
    // The reproduction: nothing keeps a reference to the lock object.
    await (async () => {
      const lock = a.lock('gc:nightly');
      ref = new WeakRef(lock);
      if (await lock.tryAcquire()) ran = true;
    })();
    assert.equal(ran, true);
    await collect();
    assert.notEqual(ref.deref(), undefined, 'the client keeps the lock object that holds');
    assert.equal(await b.lock('gc:nightly').tryAcquire({ waitMs: 0 }), false, 'still held after gc');
    assert.equal(a.heldCount(), 1);
    assert.equal(await redis.exists('gc:nightly'), 1);

    await a.close();
    const other = b.lock('gc:nightly');
    assert.equal(await other.tryAcquire({ waitMs: 0 }), true, 'free after close()');
    await other.release();
  } finally {
    await a.close();
    await b.close();
  }
});

test("a dropped lock object's 'lost' listener still hears the loss, then the object is collectable", async () => {
  // Short watchdog: renewal every 200 ms finds the owner field gone.
  const a = await Client.connect(server.url, { watchdogTimeoutMs: 600 });
  const b = await Client.connect(server.url);
  try {
    const heard = [];
    let ref;
    await (async () => {
      const lock = a.lock('gc:lost');
      lock.on('lost', (err) => heard.push(err));
      ref = new WeakRef(lock);
      await lock.acquire();
    })();
    await collect();
    assert.equal(await b.lock('gc:lost').forceUnlock(), true);
    await eventually(() => heard.length === 1, { timeoutMs: 5000, what: "the dropped lock's 'lost' event" });
    assert.ok(heard[0] instanceof LockLostError);
    assert.equal(heard[0].code, 'ERR_LOCK_LOST');
    // The hold is over: nothing keeps the lock object any more.
    await eventually(async () => {
      await collect(1);
      return ref.deref() === undefined;
    }, { timeoutMs: 5000, what: 'the lost lock object to be collected' });
    assert.equal(heard.length, 1);
  } finally {
    await a.close();
    await b.close();
  }
});

test('a temporary client that holds is not collected with its hold', async () => {
  const b = await Client.connect(server.url);
  let clientRef;
  try {
    await (async () => {
      const a = await Client.connect(server.url);
      clientRef = new WeakRef(a);
      assert.equal(await a.lock('gc:client').tryAcquire(), true);
    })();
    await collect();
    assert.equal(await b.lock('gc:client').tryAcquire({ waitMs: 0 }), false, 'still held after gc');
  } finally {
    const a = clientRef?.deref();
    assert.ok(a, 'the client that holds was kept');
    await a.close();
    await b.close();
  }
  assert.equal(await redis.exists('gc:client'), 0, 'close() released it');
});

test('a released lock object is collectable', async () => {
  const a = await Client.connect(server.url);
  try {
    const refs = [];
    const finalized = new Set();
    const registry = new FinalizationRegistry((tag) => finalized.add(tag));
    await (async () => {
      // Released through release(), using() and a Hold, and one that re-entered twice.
      const l1 = a.lock('gc:released:1');
      await l1.acquire();
      await l1.release();
      const l2 = a.lock('gc:released:2');
      assert.equal(await l2.using(async () => 'ran'), 'ran');
      const l3 = a.lock('gc:released:3');
      const hold = await l3.acquire();
      await l3.acquire();
      await l3.release();
      await hold.release();
      const l4 = a.lock('gc:released:4');
      await l4.tryAcquire({ leaseMs: 10_000 });
      await l4.releaseAll();
      for (const [i, l] of [l1, l2, l3, l4].entries()) {
        refs.push(new WeakRef(l));
        registry.register(l, i + 1);
      }
    })();
    assert.equal(a.heldCount(), 0);
    await eventually(async () => {
      await collect(1);
      return refs.every((r) => r.deref() === undefined) && finalized.size === 4;
    }, { timeoutMs: 5000, what: 'released lock objects to be collected' });
  } finally {
    await a.close();
  }
});

test('a hold that ends at the end of its explicit lease frees its lock object', async () => {
  const a = await Client.connect(server.url);
  try {
    let ref;
    let lost;
    await (async () => {
      const lock = a.lock('gc:lease');
      lost = once(lock, 'lost');
      ref = new WeakRef(lock);
      assert.equal(await lock.tryAcquire({ leaseMs: 300 }), true);
    })();
    await collect();
    const [err] = await within(lost, 5000, "'lost' at the lease end");
    assert.ok(err instanceof LockLostError);
    await eventually(async () => {
      await collect(1);
      return ref.deref() === undefined;
    }, { timeoutMs: 5000, what: 'the lock object to be collected after its lease ended' });
  } finally {
    await a.close();
  }
});

test('lock objects sharing a holder: released through the other one, still collectable', async () => {
  const a = await Client.connect(server.url);
  try {
    let ref;
    const keep = a.lock('gc:shared', { holderId: 7 });
    await (async () => {
      const lock = a.lock('gc:shared', { holderId: 7 }); // the same holder as `keep`
      ref = new WeakRef(lock);
      await lock.acquire();
    })();
    await keep.release(); // ends the hold of `lock` too, without telling that object
    assert.equal(await keep.isLocked(), false);
    // Later acquisitions on the client sweep lock objects whose holds ended.
    const many = Array.from({ length: 100 }, (_, i) => a.lock(`gc:many:${i}`));
    await Promise.all(many.map((l) => l.acquire()));
    await Promise.all(many.map((l) => l.release()));
    await eventually(async () => {
      await collect(1);
      return ref.deref() === undefined;
    }, { timeoutMs: 5000, what: 'the lock object released through another object to be collected' });
  } finally {
    await a.close();
  }
});

test("a lock object collected while unheld frees its native handle; one that holds keeps it until its hold ends", async () => {
  const native = require('../lib/native');
  const a = await Client.connect(server.url);
  try {
    await collect(); // earlier tests' lock objects first
    const base = native.liveLocks();
    await (async () => {
      for (let i = 0; i < 50; i++) a.lock(`gc:native:${i}`); // never acquired
      const used = a.lock('gc:native:used');
      await used.acquire();
      await used.release();
      assert.equal(await a.lock('gc:native:held').tryAcquire(), true); // dropped while it holds
    })();
    assert.equal(native.liveLocks(), base + 52);
    await eventually(async () => {
      await collect(1);
      return native.liveLocks() <= base + 1;
    }, { timeoutMs: 5000, what: "the unheld lock objects' native handles to be dropped" });
    assert.equal(a.heldCount(), 1);
    assert.equal(await redis.exists('gc:native:held'), 1, 'the dropped lock object still holds');
    await a.close();
    await eventually(async () => {
      await collect(1);
      return native.liveLocks() <= base;
    }, { timeoutMs: 5000, what: "the native handle of the lock object that held, after close()" });
  } finally {
    await a.close();
  }
});
