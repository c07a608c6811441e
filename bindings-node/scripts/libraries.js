'use strict';
// The libraries the benchmarks (bench.js, scripts/server-cost.js) compare, each as
// { name, handle(key) -> { acquire(), release(what acquire answered) } }: ferrolock,
// node-redlock v5 and redis-semaphore's Mutex at their default settings, and the protocol's floor.
//
// The floor: ferrolock's
// own acquire and release scripts (Redisson's hash with its lease, and the release's
// unlock latch that makes a retried release idempotent), sent by ioredis, which is
// redis-semaphore's and node-redlock's client stack, with the keys and arguments core
// sends, the latches deleted in batches as core's sweeper does (one UNLINK per 5 ms).
// No client of this protocol can make the server do less for it: set beside a peer, it
// tells how much of a gap is the protocol and how much is the client.
//
// `scripts` replaces the Lua (server-cost.js takes the cost apart with variants).
//
// The bare floor: the same requests sent by `bareClient`, a client that only writes a
// request's bytes and resolves with its reply's first line: what the protocol allows a
// client that adds nothing (latency-floor.js, client-cost.js).

const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { createHash, randomUUID } = require('node:crypto');
const Redlock = require('redlock').default;
const { Mutex } = require('redis-semaphore');

function ferrolock(client) {
  return {
    name: 'ferrolock',
    async handle(key) {
      const lock = client.lock(key);
      return { acquire: () => lock.acquire(), release: (hold) => hold.release() };
    },
  };
}

// Default settings: retryCount 10, retryDelay 200 ms, jitter 100 ms; TTL 10 s.
function nodeRedlock(redis) {
  const redlock = new Redlock([redis]);
  return {
    name: 'node-redlock v5',
    async handle(key) {
      return { acquire: () => redlock.acquire([key], 10_000), release: (lock) => lock.release() };
    },
  };
}

// Defaults: retryInterval 10 ms, lockTimeout 10 s.
function redisSemaphore(redis) {
  return {
    name: 'redis-semaphore Mutex',
    async handle(key) {
      const mutex = new Mutex(redis, key);
      return { acquire: () => mutex.acquire(), release: () => mutex.release() };
    },
  };
}

const SCRIPTS = path.join(__dirname, '..', '..', 'core', 'src', 'scripts', 'lock');

function ourScripts() {
  const read = (file) => fs.readFileSync(path.join(SCRIPTS, file), 'utf8');
  return { acquire: read('acquire.lua'), release: read('release.lua') };
}

function resp(args) {
  let out = `*${args.length}\r\n`;
  for (const a of args) out += `$${Buffer.byteLength(String(a))}\r\n${a}\r\n`;
  return out;
}

/**
 * The least a client can do: write each request's bytes at once, resolve with the
 * reply's first line (every reply sent here is one line), in order (pipelined).
 */
function bareClient(port) {
  const socket = net.connect(port, '127.0.0.1');
  socket.setNoDelay(true);
  const pending = [];
  let got = '';
  socket.on('data', (data) => {
    got += data.toString('latin1');
    let end;
    while ((end = got.indexOf('\r\n')) >= 0) {
      const reply = got.slice(0, end);
      got = got.slice(end + 2);
      const [resolve, reject] = pending.shift();
      if (reply.startsWith('-')) reject(new Error(`bare client: ${reply}`));
      else resolve(reply);
    }
  });
  return {
    ready: new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject)),
    send: (args) => new Promise((resolve, reject) => {
      pending.push([resolve, reject]);
      socket.write(resp(args));
    }),
    close: () => socket.destroy(),
  };
}

/**
 * The protocol's floor: our scripts sent by ioredis (`redis`), or by `bare` (a
 * bareClient) when given, `redis` then only loading them.
 */
function protocolFloor(redis, { name = 'floor: ioredis + our Lua', scripts = ourScripts(), bare = null } = {}) {
  const acquireCmd = `ferroAcquire${randomUUID().slice(0, 8)}`;
  const releaseCmd = `ferroRelease${randomUUID().slice(0, 8)}`;
  redis.defineCommand(acquireCmd, { numberOfKeys: 1, lua: scripts.acquire });
  redis.defineCommand(releaseCmd, { numberOfKeys: 3, lua: scripts.release });
  const sha = (lua) => createHash('sha1').update(lua).digest('hex');
  const [acquireSha, releaseSha] = [sha(scripts.acquire), sha(scripts.release)];
  const loaded = bare ? Promise.all([redis.script('LOAD', scripts.acquire), redis.script('LOAD', scripts.release)]) : null;
  const clientId = randomUUID();
  let holders = 0;
  let requests = 0;
  let latches = [];
  return {
    name,
    async handle(key) {
      const owner = `${clientId}:${++holders}`;
      const channel = `redisson_lock__channel:{${key}}`;
      const latchPrefix = `redisson_unlock_latch:{${key}}:${clientId}:`;
      if (bare) {
        await loaded;
        return {
          acquire: async () => {
            const reply = await bare.send(['EVALSHA', acquireSha, '1', key, '30000', owner]);
            if (reply[0] !== ':') throw new Error(`floor: ${key} is held by someone else`);
          },
          release: async () => {
            const latch = latchPrefix + ++requests;
            const reply = await bare.send(['EVALSHA', releaseSha, '3', key, channel, latch, owner, '30000', 'publish', '5000', '1']);
            if (reply !== ':1') throw new Error(`floor: release of ${key} answered ${reply}`);
            latches.push(latch);
            if (latches.length >= 32) bare.send(['UNLINK', ...latches.splice(0)]).catch(() => {}); // they expire by themselves
          },
        };
      }
      return {
        acquire: async () => {
          const reply = await redis[acquireCmd](key, '30000', owner);
          if (typeof reply !== 'number') throw new Error(`floor: ${key} is held by someone else`);
          return reply;
        },
        release: async () => {
          const latch = latchPrefix + ++requests;
          const reply = await redis[releaseCmd](key, channel, latch, owner, '30000', 'publish', '5000', '1');
          if (reply !== 1) throw new Error(`floor: release of ${key} answered ${reply}`);
          latches.push(latch);
          if (latches.length === 1) {
            setTimeout(() => {
              const batch = latches;
              latches = [];
              redis.unlink(...batch).catch(() => {}); // they expire by themselves
            }, 5);
          }
        },
      };
    },
  };
}

// n acquire+release cycles of one handle, one after the other.
async function cycles(handle, n) {
  for (let i = 0; i < n; i++) await handle.release(await handle.acquire());
}

module.exports = { cycles, ferrolock, nodeRedlock, redisSemaphore, protocolFloor, ourScripts, bareClient };
