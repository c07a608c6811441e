'use strict';
// Strict options: an unknown key (a misspelling such as `waitMS`, another library's
// name such as `timeout`) or a value of the wrong type is a TypeError naming the
// valid keys, never silently ignored; the call takes nothing.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const ferrolock = require('..');
const { Client, Lock, Redlock, ArgumentTypeError, InvalidArgumentError, FerrolockError } = ferrolock;
const { useRedis } = require('./helpers');

let server;
let client;
useRedis((env) => ({ server, client } = env));

/** An ArgumentTypeError: a TypeError, and to ferrolock's catchers an InvalidArgumentError. */
function typeError(...patterns) {
  return (e) => {
    assert.ok(e instanceof TypeError, `not a TypeError: ${e && e.stack}`);
    assert.ok(e instanceof ArgumentTypeError);
    assert.ok(e instanceof InvalidArgumentError, 'caught as an InvalidArgumentError too');
    assert.ok(e instanceof FerrolockError, 'caught as a FerrolockError too');
    assert.equal(e.code, 'ERR_INVALID_ARGUMENT');
    for (const p of patterns) assert.match(e.message, p);
    return true;
  };
}

test('unknown option keys: a TypeError that names the key and the valid ones, for every options object', async () => {
  const lock = client.lock('opt:unknown');
  // [call, the key in the message, the valid keys it must list]
  const cases = [
    [() => lock.acquire({ waitMS: 10 }), /"waitMS" \(did you mean waitMs\?\)/, /valid options: label, leaseMs, signal, waitMs$/],
    [() => lock.acquire({ timeout: 10 }), /acquire options: unknown option "timeout" \(did you mean waitMs\?\)/, /leaseMs, signal, waitMs/],
    [() => lock.tryAcquire({ ttl: 1000 }), /tryAcquire options: unknown option "ttl" \(did you mean leaseMs\?\)/, /leaseMs, signal, waitMs/],
    [() => lock.using(async () => 'ran', { lease: 1000 }), /using options: unknown option "lease" \(did you mean leaseMs\?\)/, /leaseMs, minHoldMs, signal, waitMs/],
    [() => lock.using(async () => 'ran', { minHold: 1000 }), /using options: unknown option "minHold"/, /minHoldMs/],
    [() => client.election('opt:e', { name: 'x' }), /election options: unknown option "name"/, /valid options: label$/],
    [() => client.election('opt:e').campaign({ timeout: 10 }), /campaign options: unknown option "timeout" \(did you mean waitMs\?\)/, /valid options: signal, waitMs$/],
    [() => client.lock('opt:x', { holder: 1 }), /lock options: unknown option "holder"/, /valid options: holderId, label, owner$/],
    [() => client.fencedLock('opt:x', { ownerId: 'a' }), /lock options: unknown option "ownerId"/, /holderId, label, owner/],
    [() => Lock.multi([lock], { quorum: 'all', mode: 'x' }), /Lock\.multi options: unknown option "mode"/, /valid options: quorum$/],
    [() => Client.connect(server.url, { watchdogTimeout: 5000 }), /connect options: unknown option "watchdogTimeout" \(did you mean watchdogTimeoutMs\?\)/, /driftFactor/],
    [() => Client.connect(server.url, { timeout: 5000 }), /connect options: unknown option "timeout"/, /connectTimeoutMs, .*responseTimeoutMs/],
    [() => Redlock.connect([server.url], { retryCount: 3 }), /Redlock\.connect options: unknown option "retryCount"/, /quorum/],
    [() => ferrolock.setLogger(() => {}, { filter: 'info' }), /setLogger options: unknown option "filter"/, /valid options: level$/],
  ];
  for (const [call, ...patterns] of cases) {
    let result;
    try {
      result = call(); // some throw, the async ones reject
    } catch (e) {
      typeError(...patterns)(e);
      continue;
    }
    await assert.rejects(result, typeError(...patterns), String(call));
  }
  assert.equal(await lock.isLocked(), false, 'nothing was taken by a refused call');
  assert.equal(client.heldCount(), 0);
});

test('wrong value types: a TypeError naming the option; ranges stay InvalidArgumentError', async () => {
  const lock = client.lock('opt:types');
  await assert.rejects(lock.acquire({ waitMs: '100' }), typeError(/waitMs must be a number of milliseconds, not string/));
  await assert.rejects(lock.acquire({ leaseMs: true }), typeError(/leaseMs must be a number of milliseconds, not boolean/));
  await assert.rejects(lock.tryAcquire({ waitMs: 10n }), typeError(/waitMs .* not bigint/));
  await assert.rejects(lock.acquire({ signal: {} }), typeError(/signal must be an AbortSignal/));
  await assert.rejects(lock.acquire([]), typeError(/acquire options must be an object, not an array/));
  await assert.rejects(lock.acquire('fast'), typeError(/acquire options must be an object, not string/));
  await assert.rejects(lock.using(42), typeError(/using\(\) needs a function, not number/));
  assert.throws(() => client.lock(42), typeError(/a lock name must be a string or a Uint8Array, not number/));
  assert.throws(() => client.lock('opt:t', { holderId: '7' }), typeError(/holderId must be a number or a bigint, not string/));
  assert.throws(() => client.lock('opt:t', { owner: 7 }), typeError(/owner must be a string, not number/));
  await assert.rejects(Client.connect(server.url, { replicaAck: 1 }), typeError(/replicaAck must be 'off', 'one', 'majority', 'all' or a boolean, not number/));
  await assert.rejects(Client.connect(server.url, { replicaAckAof: 'yes' }), typeError(/replicaAckAof must be true or false, not string/));
  await assert.rejects(Client.connect(server.url, { driftFactor: '0.1' }), typeError(/driftFactor must be a number, not string/));
  assert.throws(() => Lock.multi([lock], { quorum: 2 }), typeError(/quorum: 'majority' .* not 2/));
  await assert.rejects(Redlock.connect([server.url], { quorum: 2 }), typeError(/quorum must be 'majority' .* not number/));
  // Out of range is not a type error: InvalidArgumentError, not a TypeError.
  for (const call of [() => lock.acquire({ leaseMs: -1 }), () => lock.tryAcquire({ waitMs: NaN })]) {
    await assert.rejects(call(), (e) => e instanceof InvalidArgumentError && !(e instanceof TypeError) && e.code === 'ERR_INVALID_ARGUMENT');
  }
  // Other ferrolock errors are not caught as InvalidArgumentError.
  await assert.rejects(lock.release(), (e) => e.code === 'ERR_NOT_OWNER' && !(e instanceof InvalidArgumentError) && !(e instanceof TypeError));
  assert.equal(await lock.isLocked(), false);
});

test('valid options are accepted: every key, undefined and null values, no options at all', async () => {
  const lock = client.lock('opt:valid', { holderId: undefined, owner: null });
  const hold = await lock.acquire({ waitMs: 1000, leaseMs: 5000, signal: new AbortController().signal });
  await hold.release();
  assert.equal(await lock.tryAcquire({ waitMs: undefined, leaseMs: null, signal: undefined }), true);
  await lock.release();
  assert.equal(await lock.using(async () => 'ran', {}), 'ran');
  assert.equal(await lock.using(async () => 'ran'), 'ran');
  // Inherited keys are read as options too, so they are checked as well.
  const defaults = { waitMs: 1000 };
  assert.equal(await lock.tryAcquire(Object.create(defaults)), true);
  await lock.release();
  await assert.rejects(lock.tryAcquire(Object.create({ wait: 1 })), typeError(/unknown option "wait"/));
  const c = await Client.connect(server.url, { watchdogTimeoutMs: 5000, responseTimeoutMs: undefined, driftFactor: null });
  await c.close();
  const c2 = await Client.connect(server.url, null);
  await c2.close();
});
