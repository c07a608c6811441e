'use strict';
// Test harness: redis-server processes started (and killed) by the tests themselves,
// on free loopback ports, in temp dirs. Never a server the tests did not start.

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { once } = require('node:events');
const { setTimeout: delay } = require('node:timers/promises');

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Starts redis-server; resolves when it logs that it accepts connections. */
async function startRedis(extraArgs = []) {
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferrolock-node-test-'));
    const proc = spawn('redis-server', [
      '--port', String(port), '--bind', '127.0.0.1', '--dir', dir,
      '--save', '', '--appendonly', 'no', '--logfile', '', '--loglevel', 'notice',
      ...extraArgs,
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    const ready = await new Promise((resolve) => {
      const onData = (chunk) => {
        log += chunk;
        if (/Ready to accept connections/.test(log)) resolve(true);
        if (/Address already in use|Could not create server TCP/i.test(log)) resolve(false);
      };
      proc.stdout.on('data', onData);
      proc.stderr.on('data', onData);
      proc.on('exit', () => resolve(false));
      proc.on('error', () => resolve(false));
    });
    proc.stdout.resume();
    proc.stderr.resume();
    if (!ready) {
      if (proc.exitCode === null) proc.kill('SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
      if (/ENOENT/.test(String(proc.spawnargs)) || attempt === 4) {
        throw new Error(`redis-server did not start: ${log}`);
      }
      continue;
    }
    return {
      port,
      url: `redis://127.0.0.1:${port}`,
      proc,
      async stop() {
        if (proc.exitCode === null && proc.signalCode === null) {
          const exited = once(proc, 'exit');
          proc.kill('SIGKILL');
          await exited;
        }
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  throw new Error('redis-server did not start');
}

/** Polls `fn` until it returns truthy (a condition wait with a deadline, not a sleep). */
async function eventually(fn, { timeoutMs = 5000, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await delay(5);
  }
}

/** Rejects if `promise` does not settle within `ms`. */
async function within(promise, ms, what = 'operation') {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A raw Redis connection for inspecting the server. */
function raw(server) {
  const Redis = require('ioredis');
  return new Redis(server.port, '127.0.0.1', { lazyConnect: false, maxRetriesPerRequest: 1 });
}

/** Keys left on the server that are not fencing-token counters (those persist by design). */
async function leftoverKeys(redis) {
  const keys = await redis.keys('*');
  return keys.filter((k) => !k.startsWith('redisson_lock_token:')).sort();
}

/**
 * Registers before/after hooks that start a redis-server for this test file (and,
 * unless `clientOptions` is false, a connected Client) and stop them afterwards.
 * `assign` receives { server, redis, client } once they exist.
 */
function useRedis(assign, clientOptions = {}) {
  const { before, after } = require('node:test');
  const env = { server: null, redis: null, client: null };
  before(async () => {
    env.server = await startRedis();
    env.redis = raw(env.server);
    if (clientOptions !== false) {
      const { Client } = require('..');
      env.client = await Client.connect(env.server.url, clientOptions);
    }
    assign(env);
  });
  after(async () => {
    await env.client?.close();
    env.redis?.disconnect();
    await env.server?.stop();
  });
}

module.exports = { startRedis, eventually, within, raw, leftoverKeys, freePort, useRedis };
