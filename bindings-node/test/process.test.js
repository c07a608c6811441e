'use strict';
// worker_threads contention, workers that end without close(), exit after close(),
// ESM import, and TypeScript seeing the types.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const fs = require('node:fs');
const os = require('node:os');
const { once } = require('node:events');
const { spawn } = require('node:child_process');
const { Worker } = require('node:worker_threads');
const { Client } = require('..');
const { within, useRedis } = require('./helpers');

const fixtures = path.join(__dirname, 'fixtures');
let server;
let redis;
useRedis((env) => ({ server, redis } = env), false);

/** Runs a child process; resolves with its exit code and output, or fails after `ms`. */
function runChild(cmd, args, ms, opts = {}) {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { out += d; });
  const exited = once(child, 'exit').then(([code, signal]) => ({ code, signal, out }));
  return within(exited, ms, `${path.basename(args[0] || cmd)} exiting by itself`).catch((e) => {
    child.kill('SIGKILL');
    throw new Error(`${e.message}; output: ${out}`);
  });
}

function startWorker(data) {
  const worker = new Worker(path.join(fixtures, 'worker.js'), { workerData: data });
  const messages = [];
  worker.on('message', (m) => messages.push(m));
  const exited = once(worker, 'exit').then(([code]) => ({ code, messages }));
  return { worker, exited };
}

test('worker_threads: 4 workers with their own clients contend on one lock', async () => {
  const shared = new SharedArrayBuffer(4);
  const rounds = 40;
  const workers = Array.from({ length: 4 }, () =>
    startWorker({ url: server.url, name: 'workers:count', rounds, shared }));
  const results = await within(Promise.all(workers.map((w) => w.exited)), 60_000, 'workers');
  for (const r of results) {
    assert.equal(r.code, 0, JSON.stringify(r.messages));
    assert.deepEqual(r.messages, [{ done: true }]);
  }
  assert.equal(new Int32Array(shared)[0], 4 * rounds);
  assert.equal(await redis.exists('workers:count'), 0);
});

test('a worker that ends without close() exits, and its lock is released', async () => {
  const { exited } = startWorker({ url: server.url, name: 'workers:orphan', mode: 'orphan', shared: new SharedArrayBuffer(4) });
  const r = await within(exited, 20_000, 'orphan worker exit');
  assert.equal(r.code, 0);
  assert.equal(r.messages[0].held, true);
  // The watchdog lease is 30 s: getting the lock within 5 s means the worker's
  // environment teardown released it.
  const client = await Client.connect(server.url);
  try {
    const lock = client.lock('workers:orphan');
    const t0 = performance.now();
    assert.equal(await lock.tryAcquire({ waitMs: 5000 }), true);
    assert.ok(performance.now() - t0 < 5000);
    await lock.release();
  } finally {
    await client.close();
  }
});

test('the process exits by itself after client.close()', async () => {
  const r = await runChild(process.execPath, [path.join(fixtures, 'exit-after-close.js'), server.url], 15_000);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /closed; held=released; pending wait ended with ERR_CLIENT_CLOSED/);
  const after = Number(/exit (\d+) ms after close/.exec(r.out)?.[1]);
  assert.ok(after < 1000, `the event loop stayed alive ${after} ms after close()`);
  assert.equal(await redis.exists('exit:test'), 0, 'close() released the hold');
});

test('a process that never closes its client still exits, and releases its lock', async () => {
  const r = await runChild(process.execPath, [path.join(fixtures, 'exit-without-close.js'), server.url], 15_000);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /holding; not closing/);
  // Watchdog lease is 30 s: the key is gone because the exiting process released it.
  assert.equal(await redis.exists('exit:open'), 0);
});

test("ESM: import { Client } from 'ferrolock'", async () => {
  const r = await runChild(process.execPath, [path.join(fixtures, 'esm-import.mjs'), server.url], 15_000);
  assert.equal(r.code, 0, r.out);
  assert.deepEqual(JSON.parse(r.out.trim()), { same: true, error: 'AbortError', notReplicated: 'ERR_NOT_REPLICATED', locked: false, multi: 'majority' });
});

test('TypeScript sees the types (tsc --noEmit --strict, CommonJS and ESM)', async () => {
  const tsc = require.resolve('typescript/bin/tsc');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferrolock-ts-'));
  try {
    const base = { strict: true, noEmit: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', types: ['node'], typeRoots: [path.dirname(path.dirname(require.resolve('@types/node/package.json')))] };
    for (const [file, src] of Object.entries(typeSources())) fs.writeFileSync(path.join(dir, file), src);
    fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { ...base, lib: ['es2022', 'esnext.disposable'] }, files: Object.keys(typeSources()) }));
    // Resolve 'ferrolock' to this package, the way an installed dependency would be.
    fs.mkdirSync(path.join(dir, 'node_modules'));
    fs.symlinkSync(path.join(__dirname, '..'), path.join(dir, 'node_modules', 'ferrolock'), 'dir');
    const r = await runChild(process.execPath, [tsc, '-p', dir], 120_000);
    assert.equal(r.code, 0, r.out);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

function typeSources() {
  const body = `
async function main(): Promise<void> {
  const client: Client = await Client.connect('redis://127.0.0.1:6379', { watchdogTimeoutMs: 30000, driftFactor: 0.01 });
  const lock: Lock = client.lock('orders:42');
  const fenced = client.fencedLock('orders:42', { holderId: 7 });
  const hold: Hold = await lock.acquire({ leaseMs: 1000, signal: AbortSignal.timeout(100) });
  const token: bigint | null = hold.token;
  const s: AbortSignal = hold.signal;
  const l: boolean = hold.lost;
  await hold.release();
  const ok: boolean = await lock.tryAcquire({ waitMs: 0 });
  await lock.release();
  const b: boolean[] = [await lock.isLocked(), await lock.isHeld(), await lock.forceUnlock(), lock.lost];
  const n: number = await lock.holdCount();
  const left: number | null = await lock.remainingLeaseMs();
  const t: bigint | null = fenced.token;
  const sig: AbortSignal = lock.signal;
  lock.on('lost', (err) => { const c: string = err.code; void c; });
  const r: number = await lock.using(async (signal: AbortSignal) => (signal.aborted ? 1 : 2), { leaseMs: 5, waitMs: 10 });
  {
    await using held = await lock.acquire();
    void held;
  }
  try { await lock.release(); } catch (e) {
    if (e instanceof FerrolockError && e.code === 'ERR_NOT_OWNER') { /* expected */ }
    if (e instanceof PermissionDeniedError) { const p: 'ERR_PERMISSION' = e.code; void p; }
    if (e instanceof NotReplicatedError) { const p: 'ERR_NOT_REPLICATED' = e.code; void p; }
  }
  const behindSentinel: Client = await Client.connect('redis+sentinel://127.0.0.1:26379,127.0.0.1:26380/mymaster', {
    sentinelUsername: 'default', sentinelPassword: 'pw', replicaAck: true, replicaAckTimeoutMs: 1000,
  });
  await behindSentinel.close();
  const id: string = client.id;
  const other: Client = await Client.connect('redis://127.0.0.1:6380');
  const rl: Lock = Lock.multi([client.lock('jobs'), other.lock('jobs')], { quorum: 'majority' });
  const ml: Lock = multiLock([client.lock('a'), other.lock('b')]);
  const members: readonly Lock[] = redlock([client.lock('c'), other.lock('c')]).members;
  const q: Quorum | null = rl.quorum;
  const rlHold: Hold = await rl.acquire({ waitMs: 100, leaseMs: 1000, signal: AbortSignal.timeout(100) });
  const none: bigint | null = rlHold.token;
  await rlHold.release();
  await using servers: Redlock = await Redlock.connect(['redis://a', 'redis://b', 'redis://c'], { quorum: 'all', watchdogTimeoutMs: 1000 });
  const jobs: Lock = servers.lock('jobs');
  const sq: Quorum = servers.quorum;
  const cs: readonly Client[] = servers.clients;
  await servers.close();
  await other.close();
  await client.close();
  void [token, s, l, ok, b, n, left, t, sig, r, id, ml, members, q, none, jobs, sq, cs];
}
void main;
`;
  return {
    'cjs.cts': `import { Client, Lock, Hold, FerrolockError, PermissionDeniedError, NotReplicatedError, Redlock, redlock, multiLock, Quorum } from 'ferrolock';\n${body}`,
    'esm.mts': `import ferrolock, { Client, Lock, Hold, FerrolockError, PermissionDeniedError, NotReplicatedError, Redlock, redlock, multiLock, Quorum } from 'ferrolock';\nvoid ferrolock.Client;\nvoid ferrolock.Redlock;\n${body}`,
  };
}
