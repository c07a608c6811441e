'use strict';
// The Node worker of the cross-language tests and of `ferrolock demo`: a thin user
// of bindings-node that speaks the line protocol of tests/workers/README.md.
//
//     node tests/workers/worker.js URL [WATCHDOG_MS]
//
// Env (optional): FERROLOCK_WORKER_APP (appName), FERROLOCK_WORKER_NOTE_AFTER_MS
// (holderNoteAfterMs), FERROLOCK_WORKER_SLOW_WAIT_MS (slowWaitLogMs).

const fs = require('node:fs');
const path = require('node:path');
const { once } = require('node:events');
const { setTimeout: sleep } = require('node:timers/promises');
const ferrolock = require(path.join(__dirname, '..', '..', 'bindings-node'));

/**
 * `elect`: a candidate that campaigns, writes to the outside fence with its term while
 * it leads (every 20 ms), and resigns after `resignMs` (0: leads until it is killed or
 * loses), campaigning again each time. Runs in the background.
 */
function elect(client, name, port, sha, who, resignMs) {
  const Redis = require(path.join(__dirname, '..', '..', 'bindings-node', 'node_modules', 'ioredis'));
  const election = client.election(name);
  const fence = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 });
  const write = (op, term) => fence.evalsha(sha, 3, 'fence', 'fence:dead', 'fence:events', op, String(term), who);
  (async () => {
    for (;;) {
      let leadership;
      try {
        leadership = await election.campaign();
      } catch {
        await sleep(50);
        continue;
      }
      await write('enter', leadership.term);
      const resignAt = resignMs > 0 ? Date.now() + resignMs : null;
      const lost = new Promise((resolve) => leadership.signal.addEventListener('abort', resolve, { once: true }));
      for (;;) {
        if ((await Promise.race([lost.then(() => true), sleep(20).then(() => false)])) === true) {
          await write('leave', leadership.term);
          break;
        }
        await write('write', leadership.term);
        if (resignAt !== null && Date.now() >= resignAt) {
          await write('leave', leadership.term);
          await leadership.resign();
          break;
        }
      }
    }
  })().catch((e) => process.stderr.write(`candidate ${who}: ${e}\n`));
}

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

/**
 * Acquires one level: the token (`-` for kinds without one), or null when not acquired
 * in time (then `entry.holder` is who was in the way, as the NotAcquiredError carries it).
 */
async function acquire(entry, waitMs, label) {
  const depth = entry.lock.lost ? 0 : entry.depth; // a lost hold is over: this starts a new one
  let hold;
  try {
    hold = await entry.lock.acquire({ waitMs, label });
  } catch (e) {
    if (e instanceof ferrolock.NotAcquiredError) {
      entry.holder = e.holder ?? null;
      return null;
    }
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

/**
 * Critical sections until MAX or SECONDS: `enter()` waits as long as it takes and
 * resolves with the token to log, `leave()` gives back what it took.
 */
async function count({ enter, leave }, counter, log, max, seconds, holdUs) {
  const fd = fileOp(log, () => fs.openSync(log, 'a'));
  try {
    const start = now();
    let done = 0;
    while ((max === 0 || done < max) && (seconds === 0 || now() - start < BigInt(seconds) * 1000000000n)) {
      const t0 = now();
      const token = await enter();
      const t1 = now();
      let t2;
      try {
        bumpCounter(counter);
      } finally {
        await sleepUs(holdUs);
        t2 = now();
        await leave();
      }
      fileOp(log, () => fs.writeSync(fd, `${token} ${t0} ${t1} ${t2}\n`));
      done += 1;
    }
    return done;
  } finally {
    fs.closeSync(fd);
  }
}

const KINDS = ['plain', 'fenced', 'fair', 'read', 'write'];

function kind(field) {
  if (!KINDS.includes(field)) throw invalid(`KIND must be one of ${KINDS.join(', ')}, not ${JSON.stringify(field)}`);
  return field;
}

/** An optional WAIT_MS field: absent or `-` = as long as it takes. */
function waitField(field) {
  return field === undefined || field === '-' ? undefined : number(field, 'WAIT_MS');
}

class Worker {
  constructor(client) {
    this.client = client;
    this.locks = new Map(); // `${kind} ${name}` -> { lock, depth }: one handle (one holder) per name and kind
    this.firstKind = new Map(); // name -> the kind it was first used with
    this.rw = new Map(); // name -> its read-write lock: both sides on one holder
    this.sems = new Map();
    this.permitSems = new Map();
    this.latches = new Map();
    this.labels = new Map(); // name -> the label its holders give from the next acquire on
    this.waitLogs = new Map(); // name -> the latest "waiting ..." INFO line naming it
  }

  /** Keeps core's slow-wait lines (`waiting 10 s for lock "NAME": ...`), by lock name. */
  log(record) {
    const m = /^waiting .* for lock "([^"]*)"/.exec(record.message);
    if (record.level === 'INFO' && m) this.waitLogs.set(m[1], record.message.replace(/[\r\n]/g, ' '));
  }

  /** The handle for `name` of `kind`, created on first use; no kind: the one `name` was first used with. */
  entry(name, lockKind) {
    const k = lockKind ?? this.firstKind.get(name) ?? 'plain';
    if (!this.firstKind.has(name)) this.firstKind.set(name, k);
    let entry = this.locks.get(`${k} ${name}`);
    if (!entry) {
      let lock;
      if (k === 'read' || k === 'write') {
        let rw = this.rw.get(name);
        if (!rw) this.rw.set(name, (rw = this.client.readWriteLock(name)));
        lock = k === 'read' ? rw.readLock() : rw.writeLock();
      } else {
        lock = { plain: () => this.client.lock(name), fenced: () => this.client.fencedLock(name), fair: () => this.client.fairLock(name) }[k]();
      }
      // Levels acquired and not yet released (a lost hold counts until it is released).
      entry = { lock, depth: 0 };
      this.locks.set(`${k} ${name}`, entry);
    }
    return entry;
  }

  handle(map, name, make) {
    let h = map.get(name);
    if (!h) map.set(name, (h = make(name)));
    return h;
  }

  semaphore(name) {
    return this.handle(this.sems, name, (n) => this.client.semaphore(n));
  }

  permitSemaphore(name) {
    return this.handle(this.permitSems, name, (n) => this.client.permitExpirableSemaphore(n));
  }

  latch(name) {
    return this.handle(this.latches, name, (n) => this.client.countDownLatch(n));
  }

  /** What one `count` section takes and gives back: a lock level of `field`'s kind, or one permit (`sem:P`). */
  async section(name, field) {
    const sem = /^sem:([0-9]{1,15})$/.exec(field);
    if (sem) {
      const semaphore = this.semaphore(name);
      await semaphore.trySetPermits(Number(sem[1]));
      let permits;
      return {
        enter: async () => {
          permits = await semaphore.acquire();
          return '0';
        },
        leave: () => permits.release(),
      };
    }
    const entry = this.entry(name, kind(field));
    return {
      enter: async () => {
        const token = await acquire(entry, undefined, this.labels.get(name));
        return token === '-' ? '0' : token;
      },
      leave: () => release(entry),
    };
  }

  async run(line) {
    const [command, ...args] = line.split(' ');
    const n = args.length;
    if (command === 'acquire' && (n === 2 || n === 3)) {
      const wait = n === 3 ? number(args[2], 'WAIT_MS') : undefined;
      const token = await acquire(this.entry(args[0], kind(args[1])), wait, this.labels.get(args[0]));
      return token === null ? 'timeout' : `ok ${token}`;
    }
    if (command === 'label' && n >= 2) {
      this.labels.set(args[0], args.slice(1).join(' '));
      return 'ok';
    }
    if (command === 'holder' && n === 1) {
      const seen = this.entry(args[0]).holder;
      return `ok ${seen ? seen.description.replace(/[\r\n]/g, ' ') : '-'}`;
    }
    if (command === 'elect' && n === 5) {
      elect(this.client, args[0], number(args[1], 'FENCE_PORT'), args[2], args[3], number(args[4], 'RESIGN_MS'));
      return 'ok';
    }
    if (command === 'waitlog' && n === 1) {
      return `ok ${this.waitLogs.get(args[0]) ?? '-'}`;
    }
    if (command === 'release' && (n === 1 || n === 2)) {
      await release(this.entry(args[0], n === 2 ? kind(args[1]) : undefined));
      return 'ok';
    }
    if (command === 'force_unlock' && n === 1) {
      return `ok ${await this.entry(args[0]).lock.forceUnlock()}`;
    }
    if (command === 'lost' && (n === 1 || n === 2)) {
      const entry = this.entry(args[0], n === 2 ? kind(args[1]) : undefined);
      if (entry.depth === 0) throw new Failure('ERR_NOT_OWNER', `lock ${JSON.stringify(args[0])} is not held by this worker`);
      // No await between the check and the listener: a 'lost' event cannot slip in between.
      if (!entry.lock.lost) await once(entry.lock, 'lost');
      return 'lost';
    }
    if (command === 'count' && (n === 6 || n === 7)) {
      const [name, counter, log] = args;
      const max = number(args[3], 'MAX');
      const seconds = number(args[4], 'SECONDS');
      const holdUs = number(args[5], 'HOLD_US');
      const section = await this.section(name, n === 7 ? args[6] : 'fenced');
      return `ok ${await count(section, counter, log, max, seconds, holdUs)}`;
    }
    if ((command === 'sem_set' || command === 'permit_set') && n === 2) {
      const sem = command === 'sem_set' ? this.semaphore(args[0]) : this.permitSemaphore(args[0]);
      return `ok ${await sem.trySetPermits(number(args[1], 'PERMITS'))}`;
    }
    if (command === 'sem_acquire' && (n === 2 || n === 3)) {
      const permits = number(args[1], 'PERMITS');
      const taken = await this.semaphore(args[0]).acquire({ permits, waitMs: waitField(args[2]) });
      // Permits are nobody's: `sem_release` gives back a count, so nothing is kept here.
      return taken ? 'ok' : 'timeout';
    }
    if (command === 'sem_release' && n === 2) {
      return `ok ${await this.semaphore(args[0]).release(number(args[1], 'PERMITS'))}`;
    }
    if (command === 'sem_available' && n === 1) {
      return `ok ${await this.semaphore(args[0]).available()}`;
    }
    if (command === 'permit_acquire' && n >= 1 && n <= 3) {
      const leaseMs = n === 3 ? number(args[2], 'LEASE_MS') : undefined;
      const permit = await this.permitSemaphore(args[0]).acquire({ waitMs: waitField(args[1]), leaseMs });
      return permit ? `ok ${permit.id}` : 'timeout';
    }
    if (command === 'permit_release' && n === 2) {
      return `ok ${await this.permitSemaphore(args[0]).release(args[1])}`;
    }
    if (command === 'latch_set' && n === 2) {
      return `ok ${await this.latch(args[0]).trySetCount(number(args[1], 'COUNT'))}`;
    }
    if (command === 'latch_down' && n === 1) {
      return `ok ${await this.latch(args[0]).countDown()}`;
    }
    if (command === 'latch_count' && n === 1) {
      return `ok ${await this.latch(args[0]).count()}`;
    }
    if (command === 'latch_wait' && (n === 1 || n === 2)) {
      return (await this.latch(args[0]).wait({ waitMs: n === 2 ? number(args[1], 'WAIT_MS') : undefined })) ? 'ok open' : 'timeout';
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
    const env = (name, what) => (process.env[name] ? number(process.env[name], what) : undefined);
    client = await ferrolock.Client.connect(args[0], {
      watchdogTimeoutMs,
      appName: process.env.FERROLOCK_WORKER_APP || undefined,
      holderNoteAfterMs: env('FERROLOCK_WORKER_NOTE_AFTER_MS', 'FERROLOCK_WORKER_NOTE_AFTER_MS'),
      slowWaitLogMs: env('FERROLOCK_WORKER_SLOW_WAIT_MS', 'FERROLOCK_WORKER_SLOW_WAIT_MS'),
    });
  } catch (e) {
    say(`fail ${coded(e)}`);
    process.exit(1);
  }
  say(`ready node ${process.pid}`);

  const worker = new Worker(client);
  ferrolock.setLogger((record) => worker.log(record), { level: 'ferrolock=info' });
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
