'use strict';
// A Node worker of the failover harness (tests/failover/README.md): one client of
// bindings-node, one async loop per resource, each running critical sections that the
// outside observer records.
//
//     node tests/failover/worker.js CONFIG_JSON
//
// Prints `ready JSON` once connected (or `fail MESSAGE` and exits 1), runs until `stop`
// or the end of stdin, then closes the client, prints `done JSON` and exits 0.

const net = require('node:net');
const path = require('node:path');
const readline = require('node:readline');
const { setTimeout: sleep } = require('node:timers/promises');
const ferrolock = require(path.join(__dirname, '..', '..', 'bindings-node'));

/** One connection to the observer: EVALSHA of its one script, replies in order. */
class Observer {
  constructor(port, sha) {
    this.sha = sha;
    this.pending = [];
    this.buf = Buffer.alloc(0);
    this.sock = net.connect(port, '127.0.0.1');
    this.sock.setNoDelay(true);
    this.sock.on('data', (chunk) => this.onData(chunk));
    this.sock.on('error', (e) => this.failAll(e));
    this.sock.on('close', () => this.failAll(new Error('observer connection closed')));
  }

  failAll(e) {
    for (const p of this.pending.splice(0)) p.reject(e);
  }

  onData(chunk) {
    this.buf = Buffer.concat([this.buf, chunk]);
    // Every reply of the script is one line: an integer or an error.
    for (let end = this.buf.indexOf('\r\n'); end >= 0; end = this.buf.indexOf('\r\n')) {
      const line = this.buf.subarray(0, end).toString();
      this.buf = this.buf.subarray(end + 2);
      const p = this.pending.shift();
      if (line.startsWith('-')) p.reject(new Error(`observer: ${line}`));
      else p.resolve(line);
    }
  }

  call(resource, ...argv) {
    const keys = [`obs:res:${resource}`, `obs:in:${resource}`, 'obs:stats', 'obs:olap', 'obs:ev', 'obs:secs', 'obs:windows', 'obs:log'];
    const args = ['EVALSHA', this.sha, String(keys.length), ...keys, ...argv];
    const parts = [`*${args.length}\r\n`];
    for (const a of args) parts.push(`$${Buffer.byteLength(a)}\r\n${a}\r\n`);
    return new Promise((resolve, reject) => {
      this.pending.push({ resolve, reject });
      this.sock.write(parts.join(''));
    });
  }

  enter(resource, allowed, token, sid) { return this.call(resource, 'enter', String(allowed), token, sid); }
  exit(resource, sid) { return this.call(resource, 'exit', '', '', sid); }
  lost(resource, sid) { return this.call(resource, 'lost', '', '', sid); }
  error(kind) { return this.call('-', 'err', kind); }
}

const codeOf = (e) => (e && e.code) || (e && e.name) || 'Error';

/**
 * The client, with the replica-ack policy passed through as the binding's option takes
 * it; before the named policies exist, `off`/`one` map onto the boolean.
 */
async function connect(config) {
  const options = { ...(config.node_options || {}), watchdogTimeoutMs: config.watchdog_ms };
  const policy = config.policy;
  if (policy === 'default') return [await ferrolock.Client.connect(config.url, options), 'default (no replicaAck given)'];
  try {
    return [await ferrolock.Client.connect(config.url, { ...options, replicaAck: policy }), `replicaAck=${JSON.stringify(policy)}`];
  } catch (e) {
    const legacy = { off: false, one: true, on: true }[policy];
    if (!(e instanceof TypeError || e instanceof ferrolock.InvalidArgumentError)) throw e;
    if (legacy === undefined) throw new Error(`the Node binding does not take replicaAck=${JSON.stringify(policy)}: ${e.message}`);
    return [await ferrolock.Client.connect(config.url, { ...options, replicaAck: legacy }), `replicaAck=${legacy} (for ${policy})`];
  }
}

class Worker {
  constructor(config) {
    this.config = config;
    this.id = config.id;
    this.stopping = false;
    this.epoch = 0; // bumped by the harness after each fault: semaphore loops move to a fresh semaphore
    this.client = null;
    this.errors = {};
    this.messages = new Set();
    this.sections = 0;
    this.losses = 0;
    this.observer = new Observer(config.observer_port, config.sha);
  }

  countError(what, e) {
    const kind = `node:${what}:${codeOf(e)}`;
    this.errors[kind] = (this.errors[kind] || 0) + 1;
    const message = `${kind}: ${e && e.message}`;
    if (!this.messages.has(message) && this.messages.size < 50) {
      this.messages.add(message); // each distinct message once, for tracing
      process.stderr.write(`failover worker ${this.id}: ${message}\n`);
    }
    return this.observer.error(kind);
  }

  async run(index, resource) {
    try {
      await this.sectionsOf(index, resource);
    } catch (e) {
      // The observer failed, or the binding threw what it must not.
      process.stderr.write(`failover worker ${this.id}: resource loop ${index} ended: ${e && e.stack}\n`);
      const kind = `node:crash:${codeOf(e)}`;
      this.errors[kind] = (this.errors[kind] || 0) + 1;
    }
  }

  async sectionsOf(index, resource) {
    const { kind } = resource;
    let { name } = resource;
    const allowed = Number(resource.allowed);
    const none = this.config.lock === 'none';
    const obs = this.observer;
    let lock = null;
    let semaphore = null;
    let current = null; // the section a loss notice is about, until its release
    let lostNow = null; // resolves the current section's wait early
    if (!none) {
      if (kind === 'fenced') lock = this.client.fencedLock(name);
      else if (kind === 'fair') lock = this.client.fairLock(name);
      else if (kind === 'write') lock = this.client.readWriteLock(name).writeLock();
      else if (kind !== 'semaphore') throw new Error(`unknown resource kind ${kind}`);
      if (lock) {
        lock.on('lost', () => {
          if (current !== null) {
            this.losses += 1;
            obs.lost(name, current).catch(() => {});
          }
          if (lostNow) lostNow();
        });
      }
    }
    const [low, high] = this.config.hold_ms;
    const waitMs = this.config.wait_ms;
    let seq = 0;
    let epoch = -1;
    while (!this.stopping) {
      if (kind === 'semaphore' && epoch !== this.epoch) {
        // One semaphore per fault: permits a failover lost or doubled stay with its epoch.
        epoch = this.epoch;
        name = `{${resource.name}}.e${epoch}`;
        if (!none) {
          semaphore = this.client.semaphore(name);
          await semaphore.trySetPermits(allowed).catch((e) => this.countError('set_permits', e));
        }
      }
      seq += 1;
      const sid = `${this.id}.${index}.${seq}`;
      current = sid;
      let token = '';
      let permits = null;
      try {
        if (none) {
          token = kind === 'fenced' ? String(seq) : '';
        } else if (semaphore) {
          permits = await semaphore.acquire({ waitMs });
          if (permits === null) {
            await obs.error('node:acquire:timeout');
            continue;
          }
        } else {
          const hold = await lock.acquire({ waitMs });
          if (hold.token !== null) token = String(hold.token);
        }
      } catch (e) {
        if (e instanceof ferrolock.NotAcquiredError) await obs.error('node:acquire:timeout');
        else {
          await this.countError('acquire', e);
          await sleep(50); // pacing: an outage fails every acquire at once
        }
        continue;
      }
      if (lock && lock.lost) {
        await this.release(lock, permits);
        continue; // lost before its section began: "stop when lost" means not starting
      }
      const lost = new Promise((resolve) => { lostNow = resolve; });
      await obs.enter(name, allowed, token, sid);
      this.sections += 1;
      const work = low + Math.random() * (high - low);
      const ac = new AbortController();
      await Promise.race([sleep(work, undefined, { signal: ac.signal }).catch(() => {}), lost]);
      ac.abort();
      lostNow = null;
      await obs.exit(name, sid);
      await this.release(lock, permits);
      current = null;
    }
  }

  async release(lock, permits) {
    try {
      if (permits) await permits.release();
      else if (lock) await lock.release();
    } catch (e) {
      await this.countError('release', e);
    }
  }

  /** The client's "noticed -> loss reported" histogram, when the binding has one. */
  lossMetric() {
    if (!this.client) return null;
    const metrics = this.client.metrics();
    for (const [field, value] of Object.entries(metrics)) {
      if (/notice|lossReport|lostAfter/i.test(field) && value && Array.isArray(value.bounds)) {
        return { name: field, bounds: value.bounds, counts: value.counts, count: value.count };
      }
    }
    return null;
  }
}

async function main() {
  const config = JSON.parse(process.argv[2]);
  const worker = new Worker(config);
  let effective = 'no lock';
  if (config.lock !== 'none') {
    try {
      [worker.client, effective] = await connect(config);
    } catch (e) {
      process.stdout.write(`fail ${codeOf(e)} ${String(e && e.message).replace(/[\r\n]/g, ' ')}\n`);
      process.exit(1);
    }
  }
  const loops = config.resources.map((r, i) => worker.run(i, r));
  process.stdout.write(`ready ${JSON.stringify({ pid: process.pid, policy: effective })}\n`);
  const lines = readline.createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (line.trim() === 'stop') break;
    if (line.startsWith('epoch ')) worker.epoch = Number(line.split(' ')[1]);
  }
  worker.stopping = true;
  await Promise.all(loops);
  const metric = worker.lossMetric();
  if (worker.client) {
    await worker.client.close().catch((e) => {
      const kind = `node:close:${codeOf(e)}`;
      worker.errors[kind] = (worker.errors[kind] || 0) + 1;
    });
  }
  process.stdout.write(`done ${JSON.stringify({ sections: worker.sections, losses: worker.losses, errors: worker.errors, loss_metric: metric })}\n`);
  process.exit(0);
}

main();
