'use strict';
// The Node worker of the cross-language tests and of `ferrolock demo`: a thin user
// of bindings-node that speaks the line protocol of tests/workers/README.md.
//
//     node tests/workers/worker.js URL [WATCHDOG_MS]

const fs = require('node:fs');
const path = require('node:path');
const { once } = require('node:events');
const { setTimeout: sleep } = require('node:timers/promises');
const ferrolock = require(path.join(__dirname, '..', '..', 'bindings-node'));

/** An `err CODE MESSAGE` reply decided by the worker itself. */
class Failure extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}
const invalid = (message) => new Failure('ERR_INVALID_ARGUMENT', message);

/** `CODE MESSAGE` of an error (err.code of ferrolock's errors; anything else is internal), on one line. */
function coded(e) {
  const code = e instanceof ferrolock.FerrolockError || e instanceof Failure ? e.code : 'ERR_INTERNAL';
  return `${code} ${String(e && e.message).replace(/[\r\n]/g, ' ')}`;
}

// process.stdout is synchronous for pipes and files on Linux: each reply is out at once.
const say = (line) => process.stdout.write(`${line}\n`);
const now = () => process.hrtime.bigint(); // CLOCK_MONOTONIC, ns
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function number(field, what) {
  if (!/^[0-9]{1,15}$/.test(field)) throw invalid(`${what} must be a non-negative integer, not ${JSON.stringify(field)}`);
  return Number(field);
}

function fileOp(file, op) {
  try {
    return op();
  } catch (e) {
    throw invalid(`file ${JSON.stringify(file)}: ${e.message}`);
  }
}

/** Acquires one level: the token (`-` for a plain lock), or null when not acquired in time. */
async function acquire(entry, waitMs) {
  const depth = entry.lock.lost ? 0 : entry.depth; // a lost hold is over: this starts a new one
  let hold;
  try {
    hold = await entry.lock.acquire(waitMs === undefined ? undefined : { waitMs });
  } catch (e) {
    if (e instanceof ferrolock.NotAcquiredError) return null;
    throw e;
  }
  entry.depth = depth + 1;
  return hold.token === null ? '-' : String(hold.token);
}

async function release(entry) {
  try {
    await entry.lock.release();
  } catch (e) {
    if (e.code === 'ERR_NOT_OWNER') entry.depth = 0;
    if (e.code === 'ERR_LOCK_LOST') entry.depth = Math.max(0, entry.depth - 1);
    throw e;
  }
  entry.depth = Math.max(0, entry.depth - 1);
}

/** The deliberately non-atomic counter update: read, then truncate and write. */
function bumpCounter(file) {
  let text = '';
  try {
    text = utf8.decode(fs.readFileSync(file)).trim();
  } catch (e) {
    if (e.code !== 'ENOENT') throw invalid(`file ${JSON.stringify(file)}: ${e.message}`);
  }
  if (text && !/^-?[0-9]{1,18}$/.test(text)) throw invalid(`counter file ${JSON.stringify(file)} does not hold an integer`);
  fileOp(file, () => fs.writeFileSync(file, String(BigInt(text || '0') + 1n)));
}

/** Sleeps `us` microseconds: a timer for the bulk, then a spin for the last (ms-grained) bit. */
async function sleepUs(us) {
  const end = now() + BigInt(us) * 1000n;
  if (us >= 2000) await sleep(Math.floor(us / 1000) - 1);
  while (now() < end);
}

async function count(entry, counter, log, max, seconds, holdUs) {
  const fd = fileOp(log, () => fs.openSync(log, 'a'));
  try {
    const start = now();
    let done = 0;
    while ((max === 0 || done < max) && (seconds === 0 || now() - start < BigInt(seconds) * 1000000000n)) {
      const t0 = now();
      const token = await acquire(entry, undefined);
      const t1 = now();
      let t2;
      try {
        bumpCounter(counter);
      } finally {
        await sleepUs(holdUs);
        t2 = now();
        await release(entry);
      }
      fileOp(log, () => fs.writeSync(fd, `${token} ${t0} ${t1} ${t2}\n`));
      done += 1;
    }
    return done;
  } finally {
    fs.closeSync(fd);
  }
}

class Worker {
  constructor(client) {
    this.client = client;
    this.locks = new Map(); // name -> { lock, depth }: one handle (one holder) per name
  }

  /** The handle for `name`, created on first use (fenced or plain). */
  entry(name, fenced) {
    let entry = this.locks.get(name);
    if (!entry) {
      const lock = fenced ? this.client.fencedLock(name) : this.client.lock(name);
      // Levels acquired and not yet released (a lost hold counts until it is released).
      entry = { lock, depth: 0 };
      this.locks.set(name, entry);
    }
    return entry;
  }

  async run(line) {
    const [command, ...args] = line.split(' ');
    if (command === 'acquire' && (args.length === 2 || args.length === 3) && ['plain', 'fenced'].includes(args[1])) {
      const wait = args.length === 3 ? number(args[2], 'WAIT_MS') : undefined;
      const token = await acquire(this.entry(args[0], args[1] === 'fenced'), wait);
      return token === null ? 'timeout' : `ok ${token}`;
    }
    if (command === 'release' && args.length === 1) {
      await release(this.entry(args[0], false));
      return 'ok';
    }
    if (command === 'force_unlock' && args.length === 1) {
      return `ok ${await this.entry(args[0], false).lock.forceUnlock()}`;
    }
    if (command === 'lost' && args.length === 1) {
      const entry = this.entry(args[0], false);
      if (entry.depth === 0) throw new Failure('ERR_NOT_OWNER', `lock ${JSON.stringify(args[0])} is not held by this worker`);
      // No await between the check and the listener: a 'lost' event cannot slip in between.
      if (!entry.lock.lost) await once(entry.lock, 'lost');
      return 'lost';
    }
    if (command === 'count' && args.length === 6) {
      const [name, counter, log] = args;
      const max = number(args[3], 'MAX');
      const seconds = number(args[4], 'SECONDS');
      const holdUs = number(args[5], 'HOLD_US');
      return `ok ${await count(this.entry(name, true), counter, log, max, seconds, holdUs)}`;
    }
    throw invalid(`malformed command ${JSON.stringify(line)}; see tests/workers/README.md`);
  }
}

async function main() {
  const args = process.argv.slice(2);
  let client;
  try {
    if (args.length < 1 || args.length > 2) throw invalid('usage: worker.js URL [WATCHDOG_MS]');
    const watchdogTimeoutMs = args.length === 2 ? number(args[1], 'WATCHDOG_MS') : 30000;
    client = await ferrolock.Client.connect(args[0], { watchdogTimeoutMs });
  } catch (e) {
    say(`fail ${coded(e)}`);
    process.exit(1);
  }
  say(`ready node ${process.pid}`);

  const worker = new Worker(client);
  let done = false;
  const quit = async () => {
    done = true;
    // Closing the client releases whatever this worker still holds.
    await client.close().catch(() => {});
    say('bye');
    process.exit(0);
  };
  const onLine = async (raw) => {
    if (done) return;
    let line;
    try {
      line = utf8.decode(raw);
      if (line.includes('\0')) throw new Error('NUL');
    } catch {
      say('err ERR_INVALID_ARGUMENT the command is not valid UTF-8 text');
      return;
    }
    if (line === 'quit') return quit();
    try {
      say(await worker.run(line));
    } catch (e) {
      say(`err ${coded(e)}`);
    }
  };

  // Commands run one at a time, in order; lines that arrive meanwhile wait their turn.
  let chain = Promise.resolve();
  let pending = Buffer.alloc(0);
  process.stdin.on('data', (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    for (let nl = pending.indexOf(0x0a); nl >= 0; nl = pending.indexOf(0x0a)) {
      const raw = pending.subarray(0, nl);
      pending = pending.subarray(nl + 1);
      chain = chain.then(() => onLine(raw));
    }
  });
  process.stdin.on('end', () => {
    const raw = pending;
    if (raw.length > 0) chain = chain.then(() => onLine(raw));
    chain = chain.then(() => (done ? undefined : quit()));
  });
}

main();
