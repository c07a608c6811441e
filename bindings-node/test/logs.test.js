'use strict';
// Core's log events: FERROLOCK_LOG=<filter> writes them to stderr, setLogger(fn)
// hands them to a function.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { once } = require('node:events');
const { spawn } = require('node:child_process');
const { Client, setLogger, ArgumentTypeError, InvalidArgumentError } = require('..');
const { within, eventually, useRedis } = require('./helpers');

let server;
useRedis((env) => ({ server } = env), false);

/** Runs the log-loss fixture with `env`; resolves with its exit code, stdout and stderr. */
async function runLoss(env) {
  const childEnv = { ...process.env, ...env };
  if (env.FERROLOCK_LOG === undefined) delete childEnv.FERROLOCK_LOG;
  const child = spawn(process.execPath, [path.join(__dirname, 'fixtures', 'log-loss.js'), server.url], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: childEnv,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => { stdout += d; });
  child.stderr.on('data', (d) => { stderr += d; });
  try {
    const [code] = await within(once(child, 'exit'), 20_000, 'the log-loss child');
    return { code, stdout, stderr };
  } catch (e) {
    child.kill('SIGKILL');
    throw new Error(`${e.message}; stdout: ${stdout}; stderr: ${stderr}`);
  }
}

test('FERROLOCK_LOG=info: a loss (WARN, naming the lock) and a reconnect (INFO) on stderr; DEBUG lines are not', async () => {
  const r = await runLoss({ FERROLOCK_LOG: 'info' });
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.equal(r.stdout, 'lost\nreconnected\n');
  assert.match(r.stderr, / WARN ferrolock[:\w]*: lock "log:loss" was lost by its holder .*: the watchdog found its owner field gone/, r.stderr);
  assert.match(r.stderr, / INFO ferrolock::transport::conn: command connection made again/, r.stderr);
  assert.doesNotMatch(r.stderr, / DEBUG /, 'info filters out debug');
});

test('FERROLOCK_LOG=ferrolock=debug shows debug lines; unset, nothing is logged', async () => {
  const debug = await runLoss({ FERROLOCK_LOG: 'ferrolock=debug' });
  assert.equal(debug.code, 0, debug.stdout + debug.stderr);
  assert.match(debug.stdout, /lost\nreconnected/);
  assert.match(debug.stderr, / DEBUG ferrolock::client: ferrolock client connected client=[0-9a-f-]{36}/);
  const quiet = await runLoss({ FERROLOCK_LOG: undefined });
  assert.equal(quiet.code, 0, quiet.stdout + quiet.stderr);
  assert.match(quiet.stdout, /lost\nreconnected/);
  assert.equal(quiet.stderr, '');
  const bad = await runLoss({ FERROLOCK_LOG: 'ferrolock=[' });
  assert.equal(bad.code, 0);
  assert.match(bad.stderr, /^ferrolock: FERROLOCK_LOG="ferrolock=\[" is not a valid filter .*; logging to stderr is off\n$/);
});

test('setLogger: records with level, target, message and fields, filtered by level', async () => {
  const records = [];
  // Only the client context's events: its shutdown, not the connect (ferrolock::client).
  setLogger((r) => records.push(r), { level: 'ferrolock::ctx=debug' });
  try {
    const c = await Client.connect(server.url);
    await c.close();
    await eventually(() => records.length > 0, { what: 'a log record' });
    // One function, one queue, in order: the connect event came first had it passed.
    assert.deepEqual(records[0], {
      level: 'DEBUG',
      target: 'ferrolock::ctx',
      message: 'ferrolock client shut down',
      fields: { client: c.id },
    });
    assert.equal(records.some((r) => r.target === 'ferrolock::client'), false);

    setLogger((r) => records.push(r), { level: 'ferrolock=debug' });
    const c2 = await Client.connect(server.url);
    await c2.close();
    await eventually(() => records.some((r) => r.message === 'ferrolock client shut down' && r.fields.client === c2.id), { what: 'the shutdown of c2' });
    const connected = records.find((r) => r.message === 'ferrolock client connected');
    assert.equal(connected.fields.client, c2.id);
    assert.match(connected.fields.server, /^127\.0\.0\.1:\d+$/);
  } finally {
    setLogger(null);
  }
});

test('setLogger: bad arguments', () => {
  assert.throws(() => setLogger('console'), (e) => e instanceof ArgumentTypeError && /setLogger needs a function/.test(e.message));
  assert.throws(() => setLogger(() => {}, { level: 3 }), (e) => e instanceof ArgumentTypeError && /level must be a string/.test(e.message));
  assert.throws(
    () => setLogger(() => {}, { level: 'ferrolock=[' }),
    (e) => e instanceof InvalidArgumentError && !(e instanceof TypeError) && /not a valid filter/.test(e.message),
  );
  setLogger(null);
});
