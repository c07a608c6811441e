'use strict';
// Every error code from a real cause (DESIGN §4).

const { test } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const util = require('node:util');
const ferrolock = require('..');
const { Client, FerrolockError } = ferrolock;
const { startRedis, freePort, within, eventually, raw, useRedis } = require('./helpers');

let server;
let redis;
let client;
useRedis((env) => ({ server, redis, client } = env));

function coded(code, cls) {
  return (e) => {
    assert.ok(e instanceof FerrolockError, `not a FerrolockError: ${e && e.stack}`);
    assert.ok(e instanceof ferrolock[cls], `${e.name} is not a ${cls}`);
    assert.equal(e.code, code, e.message);
    assert.ok(e.message.length > 10);
    return true;
  };
}

test('ERR_NOT_OWNER: releasing a lock this handle does not hold', async () => {
  const a = client.lock('err:owner');
  const b = client.lock('err:owner');
  await assert.rejects(a.release(), coded('ERR_NOT_OWNER', 'NotOwnerError'));
  await b.acquire();
  await assert.rejects(a.release(), coded('ERR_NOT_OWNER', 'NotOwnerError'));
  assert.equal(await b.isHeld(), true, 'a failed release changes nothing');
  await b.release();
});

test('ERR_LOCK_LOST: releasing a hold that expired', async () => {
  const a = client.lock('err:lost');
  await a.acquire({ leaseMs: 50 });
  const b = client.lock('err:lost');
  await b.acquire(); // proves the lease ran out
  await assert.rejects(a.release(), coded('ERR_LOCK_LOST', 'LockLostError'));
  await b.release();
});

test('ERR_WRONG_TYPE: the key at the lock name is not a lock', async () => {
  await redis.set('err:wrongtype', 'a string');
  const a = client.lock('err:wrongtype');
  await assert.rejects(a.isLocked(), coded('ERR_WRONG_TYPE', 'WrongTypeError'));
  await assert.rejects(a.acquire(), coded('ERR_WRONG_TYPE', 'WrongTypeError'));
  await assert.rejects(a.tryAcquire(), coded('ERR_WRONG_TYPE', 'WrongTypeError'));
  assert.equal(await redis.get('err:wrongtype'), 'a string');
  await redis.del('err:wrongtype');
});

test('ERR_INVALID_ARGUMENT: names, durations, URLs, options', async () => {
  const inv = coded('ERR_INVALID_ARGUMENT', 'InvalidArgumentError');
  assert.throws(() => client.lock(''), inv);
  assert.throws(() => client.lock('x'.repeat(4097)), inv);
  assert.throws(() => client.lock(42), inv);
  assert.throws(() => client.lock('x', { holderId: -1 }), inv);
  assert.throws(() => client.lock('x', { holderId: 1, owner: 'someone' }), inv);
  const a = client.lock('err:invalid');
  await assert.rejects(a.acquire({ leaseMs: -1 }), inv);
  await assert.rejects(a.acquire({ leaseMs: 0 }), inv);
  await assert.rejects(a.acquire({ leaseMs: 8 * 24 * 3600 * 1000 }), inv);
  await assert.rejects(a.acquire({ leaseMs: Infinity }), inv);
  await assert.rejects(a.acquire({ leaseMs: '100' }), inv);
  await assert.rejects(a.tryAcquire({ waitMs: -5 }), inv);
  await assert.rejects(a.tryAcquire({ waitMs: NaN }), inv);
  await assert.rejects(a.acquire({ signal: 'nope' }), inv);
  await assert.rejects(a.acquire(5), inv);
  await assert.rejects(a.using('not a function'), inv);
  assert.equal(await a.isLocked(), false, 'nothing was taken by a rejected call');
  await assert.rejects(Client.connect('http://127.0.0.1:1'), inv);
  await assert.rejects(Client.connect(`redis://127.0.0.1:${server.port}\0`), inv);
  await assert.rejects(Client.connect(42), inv);
  await assert.rejects(Client.connect(server.url, { watchdogTimeoutMs: 1 }), inv);
  await assert.rejects(Client.connect(server.url, { responseTimeoutMs: -1 }), inv);
});

test('driftFactor: out of range rejects with ERR_INVALID_ARGUMENT, in range is accepted', async () => {
  const inv = coded('ERR_INVALID_ARGUMENT', 'InvalidArgumentError');
  for (const driftFactor of [-0.01, 0.51, 1, NaN, Infinity, -Infinity]) {
    await assert.rejects(Client.connect(server.url, { driftFactor }), (e) => inv(e) && /drift/i.test(e.message), `driftFactor ${driftFactor}`);
  }
  await assert.rejects(Client.connect(server.url, { driftFactor: '0.1' }), (e) => inv(e) && /driftFactor/.test(e.message));
  for (const driftFactor of [0, 0.01, 0.2, 0.5]) {
    const c = await Client.connect(server.url, { driftFactor });
    try {
      const lock = c.lock('err:drift');
      const hold = await lock.acquire({ leaseMs: 5000 });
      assert.equal(await lock.isHeld(), true);
      await hold.release();
    } finally {
      await c.close();
    }
  }
});

test('sentinel and replica-ack options: bad types and ranges reject with ERR_INVALID_ARGUMENT naming the option', async () => {
  const inv = coded('ERR_INVALID_ARGUMENT', 'InvalidArgumentError');
  const bad = [
    ['sentinelUsername', [42, true, {}, ['u']]],
    ['sentinelPassword', [42, false, {}, Buffer.from('pw')]],
    ['replicaAck', ['yes', 'true', 'ONE', '', 1, 0, {}]],
    ['replicaAckAof', ['yes', 1, {}]],
    ['replicaAckTimeoutMs', ['100', NaN, Infinity, -1, 0, 600_001, 8 * 24 * 3600 * 1000, true]],
  ];
  for (const [option, values] of bad) {
    for (const value of values) {
      await assert.rejects(
        Client.connect(server.url, { [option]: value }),
        (e) => inv(e) && e.message.includes(option),
        `${option}: ${util.inspect(value)}`,
      );
    }
  }
  // A password of the wrong type is named by its type, never by its value.
  const secret = { toString: () => 'pw-s3cret-value' };
  await assert.rejects(Client.connect(server.url, { sentinelPassword: secret }), (e) => inv(e) && !util.inspect(e).includes('pw-s3cret-value'));
  // Good ones are accepted (off Sentinel they change nothing; undefined and null are "not given").
  for (const options of [
    { sentinelUsername: 'sentinel-user', sentinelPassword: 'pw', replicaAck: true, replicaAckTimeoutMs: 1 },
    { replicaAck: false, replicaAckTimeoutMs: 600_000 },
    { replicaAck: 'off' },
    { replicaAck: 'one', replicaAckAof: false },
    { replicaAck: 'majority', replicaAckAof: true },
    { replicaAck: 'all' },
    { replicaAckTimeoutMs: 0.5 }, // rounds up to 1 ms
    { sentinelUsername: undefined, sentinelPassword: null, replicaAck: undefined, replicaAckTimeoutMs: null },
  ]) {
    const c = await Client.connect(server.url, options);
    try {
      assert.ok(!util.inspect(c, { showHidden: true, depth: Infinity }).includes('sentinel-user'));
      const lock = c.lock('err:sentinel-options');
      await (await lock.acquire({ leaseMs: 5000 })).release();
    } finally {
      await c.close();
    }
  }
});

test('malformed redis+sentinel:// and redis+cluster:// URLs reject with ERR_INVALID_ARGUMENT, never echoing a password', async () => {
  const secret = 'url-s3cret-pw';
  for (const url of [
    `redis+sentinel://:${secret}@127.0.0.1:26379`, // no master name
    `redis+sentinel://:${secret}@127.0.0.1:26379/`,
    `redis+sentinel://user:${secret}@127.0.0.1:26379/mymaster/extra`,
    `redis+sentinel://:${secret}@127.0.0.1:26379/mymaster/notadb`,
    `rediss+sentinel://:${secret}@127.0.0.1:26379,,127.0.0.1:26380/mymaster`,
    `redis+sentinel://:${secret}@127.0.0.1:notaport/mymaster`,
    `redis+cluster://:${secret}@127.0.0.1:7000/3`, // a cluster has only db 0
    `rediss+cluster://:${secret}@127.0.0.1:7000?timeout=1`,
    `redis+cluster://:${secret}@`,
    `redis+nonsense://:${secret}@127.0.0.1:7000`,
  ]) {
    await assert.rejects(
      Client.connect(url),
      (e) => coded('ERR_INVALID_ARGUMENT', 'InvalidArgumentError')(e) && !util.inspect(e).includes(secret),
      url,
    );
  }
  // Well-formed, nothing listening: a ConnectionError, without the password either.
  const port = await freePort();
  for (const url of [`redis+sentinel://:${secret}@127.0.0.1:${port}/mymaster`, `redis+cluster://:${secret}@127.0.0.1:${port}`]) {
    await assert.rejects(
      within(Client.connect(url, { connectTimeoutMs: 500 }), 10_000, 'connect'),
      (e) => coded('ERR_CONNECTION', 'ConnectionError')(e) && !util.inspect(e).includes(secret),
      url,
    );
  }
});

test('NotReplicatedError: exported with its code (its real cause: test/sentinel.test.js)', () => {
  const { NotReplicatedError } = ferrolock;
  assert.equal(typeof NotReplicatedError, 'function');
  assert.equal(NotReplicatedError.code, 'ERR_NOT_REPLICATED');
  const e = new NotReplicatedError('no replica acknowledged');
  assert.ok(e instanceof FerrolockError);
  assert.ok(e instanceof Error);
  assert.equal(e.code, 'ERR_NOT_REPLICATED');
  assert.equal(e.name, 'NotReplicatedError');
  assert.equal(e.message, 'no replica acknowledged');
});

/** A redis-server with ACL user `limited` (password pw) made by `rules`; runs `fn(client, admin)`. */
async function withAclUser(rules, fn) {
  const acl = await startRedis();
  const admin = raw(acl);
  try {
    await admin.call('ACL', 'SETUSER', 'limited', 'on', '>pw', ...rules);
    const c = await Client.connect(`redis://limited:pw@127.0.0.1:${acl.port}`);
    try {
      await fn(c, admin);
    } finally {
      await c.close();
    }
  } finally {
    admin.disconnect();
    await acl.stop();
  }
}

test('ERR_PERMISSION: an ACL user without access to the lock key', async () => {
  const perm = coded('ERR_PERMISSION', 'PermissionDeniedError');
  assert.equal(new ferrolock.PermissionDeniedError('x').code, 'ERR_PERMISSION');
  assert.equal(ferrolock.PermissionDeniedError.code, 'ERR_PERMISSION');
  await withAclUser(['~allowed:*', '&*', '+@all'], async (c, admin) => {
    const lock = c.lock('err:perm:key');
    await assert.rejects(lock.acquire(), (e) => perm(e) && e.message.includes('~<lock name>') && e.message.includes('err:perm:key'));
    await assert.rejects(lock.tryAcquire({ waitMs: 0 }), perm);
    await assert.rejects(lock.isLocked(), perm);
    assert.equal(await admin.exists('err:perm:key'), 0, 'nothing was written');
    assert.equal(c.heldCount(), 0);
  });
});

// Redis 7.0 (installed here) words this refusal inside a script without NOPERM and
// without the command name; core names it from the script line.
test('ERR_PERMISSION: an ACL user without +hincrby cannot acquire', async () => {
  const perm = coded('ERR_PERMISSION', 'PermissionDeniedError');
  await withAclUser(['~*', '&*', '+@all', '-hincrby'], async (c, admin) => {
    const lock = c.lock('err:perm');
    await assert.rejects(lock.acquire(), (e) => perm(e) && e.message.includes('+hincrby'));
    await assert.rejects(lock.tryAcquire(), (e) => perm(e) && e.message.includes('+hincrby'));
    assert.equal(await admin.exists('err:perm'), 0, 'nothing was written');
    assert.equal(c.heldCount(), 0);
  });
});

test('ERR_CONNECTION: nothing listening, wrong password, server gone', async () => {
  const conn = coded('ERR_CONNECTION', 'ConnectionError');
  const port = await freePort();
  await assert.rejects(within(Client.connect(`redis://127.0.0.1:${port}`, { connectTimeoutMs: 500 }), 5000, 'connect'), conn);

  const secured = await startRedis(['--requirepass', 'right-password']);
  try {
    const bad = Client.connect(`redis://:wrong-s3cret@127.0.0.1:${secured.port}`);
    await assert.rejects(bad, (e) => conn(e) && !e.message.includes('wrong-s3cret'));
    const ok = await Client.connect(`redis://:right-password@127.0.0.1:${secured.port}`);
    await ok.close();
  } finally {
    await secured.stop();
  }

  const doomed = await startRedis();
  const c = await Client.connect(doomed.url, { connectTimeoutMs: 200, responseTimeoutMs: 200 });
  try {
    const lock = c.lock('err:gone');
    assert.equal(await lock.isLocked(), false);
    await doomed.stop();
    await assert.rejects(within(lock.isLocked(), 10_000, 'isLocked on a dead server'), conn);
    await assert.rejects(within(lock.tryAcquire(), 10_000, 'tryAcquire on a dead server'), conn);
  } finally {
    await c.close();
  }
});

test('ERR_CANCELLED: aborted wait', async () => {
  const cancelled = (e) => coded('ERR_CANCELLED', 'CancelledError')(e) && e.name === 'AbortError';
  await assert.rejects(client.lock('err:cancel').acquire({ signal: AbortSignal.abort() }), cancelled);
  assert.equal(ferrolock.AbortError, ferrolock.CancelledError);
});

test('ERR_CLIENT_CLOSED: every call on a closed client, the same error', async () => {
  const closed = (e) =>
    coded('ERR_CLIENT_CLOSED', 'ClientClosedError')(e) &&
    e.message === 'the ferrolock client is closed; create a new client';
  const c = await Client.connect(server.url);
  const lock = c.lock('err:closed');
  const fenced = c.fencedLock('err:closed:fenced');
  await lock.acquire({ leaseMs: 10_000 });
  const blocker = client.lock('err:closed:busy');
  await blocker.acquire();
  const waiting = c.lock('err:closed:busy').acquire().then(() => 'acquired', (e) => e);
  await eventually(() => c.subscribedChannels() === 1, { what: 'the waiter subscribed' });
  const closing = c.close();
  // From the moment close() is called, as `closed` says.
  assert.equal(c.closed, true);
  assert.throws(() => c.lock('err:closed:new'), closed);
  await closing;
  assert.ok(closed(await within(waiting, 3000, 'the waiting acquire')), 'a wait the close stopped');
  assert.throws(() => c.lock('err:closed'), closed);
  assert.throws(() => c.fencedLock('err:closed'), closed);
  for (const call of [
    () => lock.acquire(), () => lock.tryAcquire(), () => fenced.acquire({ waitMs: 0 }), () => lock.release(),
    () => lock.releaseAll(), () => lock.isLocked(), () => lock.isHeld(), () => lock.holdCount(),
    () => lock.remainingLeaseMs(), () => lock.status(), () => lock.forceUnlock(),
    () => lock.setHolderInfo('x'), () => lock.using(async () => {}),
  ]) {
    await assert.rejects(call(), closed, String(call));
  }
  await c.close(); // closing again is not an error
  await blocker.release();
});

test('ERR_INTERNAL: a server answering what no Redis would', async () => {
  // A fake server: +OK to everything, a string to scripts (the acquire script answers a count or an array).
  const sockets = new Set();
  const fake = net.createServer((sock) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    let buf = '';
    sock.on('data', (d) => {
      buf += d.toString('latin1');
      for (;;) {
        const cmd = parseCommand(buf);
        if (!cmd) break;
        buf = buf.slice(cmd.length);
        const verb = (cmd.args[0] || '').toUpperCase();
        if (verb === 'EVALSHA' || verb === 'EVAL') sock.write('$2\r\nno\r\n');
        else if (verb === 'PING') sock.write('+PONG\r\n');
        else sock.write('+OK\r\n');
      }
    });
    sock.on('error', () => {});
  });
  await new Promise((r) => fake.listen(0, '127.0.0.1', r));
  const c = await Client.connect(`redis://127.0.0.1:${fake.address().port}`, { responseTimeoutMs: 1000 });
  try {
    await assert.rejects(within(c.lock('err:internal').tryAcquire(), 5000, 'acquire on a fake server'), (e) => coded('ERR_INTERNAL', 'InternalError')(e) && /acquiring lock "err:internal"/.test(e.message));
  } finally {
    await c.close();
    for (const s of sockets) s.destroy();
    await new Promise((r) => fake.close(r));
  }
});

// Parses one RESP array of bulk strings from the front of `buf`; null if incomplete.
function parseCommand(buf) {
  if (!buf.startsWith('*')) {
    const end = buf.indexOf('\r\n');
    return end < 0 ? null : { args: buf.slice(0, end).split(' '), length: end + 2 };
  }
  let pos = buf.indexOf('\r\n');
  if (pos < 0) return null;
  const n = Number(buf.slice(1, pos));
  pos += 2;
  const args = [];
  for (let i = 0; i < n; i++) {
    const lineEnd = buf.indexOf('\r\n', pos);
    if (lineEnd < 0) return null;
    const len = Number(buf.slice(pos + 1, lineEnd));
    const start = lineEnd + 2;
    if (buf.length < start + len + 2) return null;
    args.push(buf.slice(start, start + len));
    pos = start + len + 2;
  }
  return { args, length: pos };
}
