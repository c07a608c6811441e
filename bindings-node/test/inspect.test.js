'use strict';
// console.log / util.inspect of locks, holds, clients and Redlocks: their name, kind
// and state, not EventEmitter internals.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const util = require('node:util');
const { once } = require('node:events');
const { Client, Redlock, redlock } = require('..');
const { within, useRedis } = require('./helpers');

let server;
let redis;
let client;
useRedis((env) => ({ server, redis, client } = env), { watchdogTimeoutMs: 600 });

/** One line, whatever its length (util.inspect breaks long ones). */
const flat = (value, options) => util.inspect(value, { breakLength: Infinity, ...options });

const INTERNALS = /_events|_eventsCount|_maxListeners|kCapture|shapeMode|\[Symbol/;

test('a lock shows its name, kind and state as it changes; no EventEmitter internals', async () => {
  const lock = client.lock('inspect:state');
  lock.on('lost', () => {});
  const free = flat(lock);
  assert.equal(free, "Lock { name: 'inspect:state', kind: 'reentrant', held: false, count: 0, lost: false, token: null }");
  assert.doesNotMatch(free, INTERNALS);
  await lock.acquire();
  await lock.acquire();
  assert.match(flat(lock), /held: true, count: 2, lost: false/);
  // console.log formats with util.inspect: the same text.
  assert.equal(util.format(lock), util.inspect(lock));
  assert.equal(util.format('%O', lock), util.inspect(lock));
  const lost = once(lock, 'lost');
  await redis.del('inspect:state');
  await within(lost, 3000, "'lost'");
  assert.match(flat(lock), /held: false, count: 0, lost: true/);
  // Nested (in an array, an object): still the short form, and a placeholder past the depth.
  assert.match(flat({ jobs: [lock] }), /jobs: \[\s*Lock \{ name: 'inspect:state'/);
  assert.equal(flat({ a: { b: { c: lock } } }, { depth: 1 }), '{ a: { b: [Object] } }');
  assert.match(flat([[lock]], { depth: 0 }), /\[ \[Array\] \]/);
  assert.equal(flat({ a: lock }, { depth: 0 }), "{ a: [Lock inspect:state] }");
});

test('a fenced lock shows its token; a hold shows its lock, token, count and whether it is over', async () => {
  const lock = client.fencedLock('inspect:fenced');
  const hold = await lock.acquire();
  assert.match(flat(lock), new RegExp(`kind: 'fenced', held: true, count: 1, lost: false, token: ${hold.token}n`));
  assert.equal(
    flat(hold),
    `Hold { lock: 'inspect:fenced', token: ${hold.token}n, holdCount: 1, lost: false, released: false }`,
  );
  await hold.release();
  assert.match(flat(hold), /released: true/);
  assert.match(flat(lock), /held: false, count: 0/);
});

test('a multi-lock shows its quorum and member count; a client its id and whether it is closed', async () => {
  const other = await Client.connect(server.url);
  try {
    const rl = redlock([client.lock('inspect:rl'), other.lock('inspect:rl')]);
    assert.match(flat(rl), /^Lock \{ name: 'inspect:rl,inspect:rl', kind: 'reentrant', quorum: 'majority', members: 2, held: false, count: 0, lost: false, token: null \}$/);
    assert.doesNotMatch(flat(rl), INTERNALS);
    assert.equal(flat(other), `Client { id: '${other.id}', closed: false }`);
  } finally {
    await other.close();
  }
  assert.equal(flat(other), `Client { id: '${other.id}', closed: true }`);
  const servers = await Redlock.connect([server.url]);
  assert.equal(flat(servers), "Redlock { quorum: 'majority', clients: 1, closed: false }");
  await servers.close();
  assert.match(flat(servers), /closed: true/);
});
