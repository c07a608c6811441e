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

// Every server the tests started and have not stopped: killed when the test process
// exits, whatever way it exits (a failed `before` hook, an uncaught exception).
const running = new Set();
process.on('exit', () => {
  for (const proc of running) {
    try {
      proc.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
});

/**
 * Starts redis-server; resolves when it logs that it accepts connections.
 * With `sentinel` (lines of a sentinel config, such as `sentinel monitor ...`), starts
 * a sentinel instead: `redis-server <conf> --sentinel`, the conf holding `port` and
 * `bind 127.0.0.1` and those lines (a sentinel rewrites its conf: it lives in the
 * server's temp dir). With `under(dir)`, the server runs under the command it answers
 * (a benchmark runs it under valgrind, writing into the server's temp dir, `dir` here too).
 * With `port`, on that port (a restart: a new empty server where the old one was).
 */
async function startRedis(extraArgs = [], { sentinel, under, port: fixedPort } = {}) {
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = fixedPort ?? await freePort();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferrolock-node-test-'));
    let args;
    if (sentinel) {
      const conf = path.join(dir, 'sentinel.conf');
      fs.writeFileSync(conf, [`port ${port}`, 'bind 127.0.0.1', ...sentinel, ''].join('\n'));
      args = [conf, '--sentinel', '--dir', dir, '--logfile', '', '--loglevel', 'notice', ...extraArgs];
    } else {
      args = [
        '--port', String(port), '--bind', '127.0.0.1', '--dir', dir,
        '--save', '', '--appendonly', 'no', '--logfile', '', '--loglevel', 'notice',
        ...extraArgs,
      ];
    }
    const command = [...(under ? under(dir) : []), 'redis-server', ...args];
    const proc = spawn(command[0], command.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    running.add(proc);
    proc.on('exit', () => running.delete(proc));
    let log = '';
    const ready = await new Promise((resolve) => {
      const onData = (chunk) => {
        log += chunk;
        // A sentinel does not say "Ready"; it names itself once it listens.
        if (/Ready to accept connections|Sentinel ID is/.test(log)) resolve(true);
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
      dir,
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

/**
 * A master, one replica of it and three sentinels monitoring it as `mymaster`
 * (quorum 2), each sentinel with `requirepass` = `password` (and that as
 * `sentinel-pass`, so that they reach each other). Resolves once the replica's link
 * is up and every sentinel names the master and knows the replica (within
 * `timeoutMs`). `stop()` kills them all; a failed start kills what it started.
 */
async function startSentinels({ password, timeoutMs = 10_000 } = {}) {
  const started = [];
  const conns = [];
  const stop = async () => {
    for (const c of conns.splice(0)) c.disconnect();
    await Promise.all(started.splice(0).map((s) => s.stop()));
  };
  try {
    const deadline = Date.now() + timeoutMs;
    const left = (what) => ({ timeoutMs: Math.max(1, deadline - Date.now()), what });
    // The delay is the master's: with it at 0, a diskless full sync starts at once.
    const master = await startRedis(['--repl-diskless-sync-delay', '0']);
    started.push(master);
    const replica = await startRedis(['--replicaof', '127.0.0.1', String(master.port), '--repl-diskless-sync-delay', '0']);
    started.push(replica);
    const replicaConn = raw(replica);
    conns.push(replicaConn);
    await eventually(async () => /master_link_status:up/.test(await replicaConn.info('replication')), left('the replica\'s link to the master'));

    const sentinels = [];
    for (let i = 0; i < 3; i++) {
      const s = await startRedis([], {
        sentinel: [
          `requirepass ${password}`,
          `sentinel sentinel-pass ${password}`,
          `sentinel monitor mymaster 127.0.0.1 ${master.port} 2`,
          'sentinel down-after-milliseconds mymaster 1000',
        ],
      });
      started.push(s);
      sentinels.push(s);
    }
    const Redis = require('ioredis');
    for (const s of sentinels) {
      const conn = new Redis(s.port, '127.0.0.1', { password, maxRetriesPerRequest: 1 });
      conns.push(conn);
      await eventually(async () => {
        try {
          const addr = await conn.call('SENTINEL', 'get-master-addr-by-name', 'mymaster');
          if (!addr || addr[1] !== String(master.port)) return false;
          const replicas = await conn.call('SENTINEL', 'replicas', 'mymaster');
          return replicas.some((fields) => {
            const f = Object.fromEntries(fields.flatMap((v, i) => (i % 2 ? [] : [[v, fields[i + 1]]])));
            return f.port === String(replica.port) && !/s_down|disconnected/.test(f.flags);
          });
        } catch {
          return false; // not answering yet
        }
      }, left(`sentinel ${s.port} to name the master and know the replica`));
    }
    for (const c of conns.splice(0)) c.disconnect();
    return {
      master,
      replica,
      sentinels,
      /** `redis+sentinel://` URL of the first two sentinels. */
      url: `redis+sentinel://127.0.0.1:${sentinels[0].port},127.0.0.1:${sentinels[1].port}/mymaster`,
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
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

/**
 * Starts tests/harness's `fault-proxy` in front of 127.0.0.1:`upstreamPort` (its path in
 * FERROLOCK_FAULT_PROXY, else target/debug/fault-proxy of the repository; test.sh builds
 * it). `send(line)` resolves with the proxy's answer once the fault is in force (see
 * tests/harness/README.md for the commands), rejecting on `error ...`; `stop()` ends it.
 */
async function startFaultProxy(upstreamPort) {
  const readline = require('node:readline');
  const bin = process.env.FERROLOCK_FAULT_PROXY || path.join(__dirname, '..', '..', 'target', 'debug', 'fault-proxy');
  if (!fs.existsSync(bin)) {
    throw new Error(`no fault-proxy at ${bin}: cargo build -p ferrolock-harness --bin fault-proxy (or set FERROLOCK_FAULT_PROXY)`);
  }
  const proc = spawn(bin, [String(upstreamPort)], { stdio: ['pipe', 'pipe', 'inherit'] });
  running.add(proc);
  proc.on('exit', () => running.delete(proc));
  const lines = readline.createInterface({ input: proc.stdout });
  const waiting = [];
  let exited = false;
  lines.on('line', (line) => waiting.shift()?.resolve(line));
  proc.on('exit', () => {
    exited = true;
    for (const w of waiting.splice(0)) w.reject(new Error('fault-proxy exited'));
  });
  const next = () => new Promise((resolve, reject) => (exited ? reject(new Error('fault-proxy exited')) : waiting.push({ resolve, reject })));
  const first = await next();
  const port = Number(/^port (\d+)$/.exec(first)?.[1]);
  if (!port) throw new Error(`fault-proxy said ${JSON.stringify(first)}`);
  let queue = Promise.resolve();
  const send = (line) => {
    const answer = queue.then(() => {
      const reply = next();
      proc.stdin.write(`${line}\n`);
      return reply;
    }).then((reply) => {
      if (!reply.startsWith('ok')) throw new Error(`fault-proxy: ${line}: ${reply}`);
      return reply;
    });
    queue = answer.catch(() => {});
    return answer;
  };
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    send,
    /** `cuts`, `open` or `accepted`: the number the proxy answers. */
    async count(what) {
      return Number((await send(what)).slice(3));
    },
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        const done = once(proc, 'exit');
        proc.stdin.end();
        await done;
      }
    },
  };
}

/**
 * True once `client` has `n` acquires parked on its one subscribed channel. The
 * subscription alone does not tell: a channel stays subscribed 100 ms after its last
 * waiter left, so a wait that just ended would count for the next before it started.
 */
function parked(client, n = 1) {
  return client.subscribedChannels() === 1 && client.metrics().waitersNow === n;
}

module.exports = { startRedis, startSentinels, eventually, within, raw, leftoverKeys, freePort, useRedis, startFaultProxy, parked };
