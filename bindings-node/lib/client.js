'use strict';
// The client: connects, makes lock handles (every kind) and the other shapes'
// handles (lib/family.js), routes lost notifications to its locks.

const { inspect } = require('node:util');
const native = require('./native');
const { asyncDispose } = require('./dispose');
const { InvalidArgumentError, ArgumentTypeError, call, callSync } = require('./errors');
const { optionKeys, optionsObject, typeOf, ms, fraction, bool, string } = require('./options');
const { Lock, HeldLocks, lostEvent } = require('./lock');
const { Election } = require('./election');
const { Semaphore, PermitExpirableSemaphore, CountDownLatch, ReadWriteLock, kCreate } = require('./family');
const { HostConnection } = require('./host');
const { holder } = require('./holder');

const CONNECT_KEYS = [
  'watchdogTimeoutMs',
  'responseTimeoutMs',
  'connectTimeoutMs',
  'retryWindowMs',
  'driftFactor',
  'sentinelUsername',
  'sentinelPassword',
  'replicaAck',
  'replicaAckAof',
  'replicaAckTimeoutMs',
  'appName',
  'holderNotes',
  'holderNoteAfterMs',
  'slowWaitLogMs',
];
const CONNECT = optionKeys('connect', CONNECT_KEYS);
const LOCK = optionKeys('lock', ['holderId', 'owner', 'label']);
const ELECTION = optionKeys('election', ['label']);
const HOLDER_NOTES = ['off', 'long', 'always'];
const REPLICA_ACK = ['off', 'one', 'majority', 'all'];

/** A name as the addon takes it: a string, or a Uint8Array's bytes (no copy). */
function rawName(name, what) {
  if (typeof name === 'string') return name;
  if (!(name instanceof Uint8Array)) {
    throw new ArgumentTypeError(`${what} name must be a string or a Uint8Array, not ${typeOf(name)}`);
  }
  return Buffer.from(name.buffer, name.byteOffset, name.byteLength);
}

class Client {
  #native;
  #held = new HeldLocks(); // the locks that hold, by lock id: kept reachable until their hold ends, told their losses
  #host; // the socket calls made on this thread send on (lib/host.js)

  constructor(nativeClient) {
    if (!nativeClient || typeof nativeClient.lock !== 'function') {
      throw new InvalidArgumentError('use `await Client.connect(url, options)` to make a client');
    }
    this.#native = nativeClient;
    this.#host = new HostConnection(nativeClient);
    // The handler keeps this client reachable (a client that holds is not collected).
    nativeClient.setLostHandler((lockId, seq, message, reason) => {
      this.#held.get(lockId)?.[lostEvent](seq, message, reason);
    });
  }

  /**
   * Connects to Redis: `redis://[user:password@]host[:port][/db]` or `rediss://...` (one
   * server, or a cluster's seed), `redis+sentinel://[user:password@]host:port[,host:port...]/<master>[/<db>]`
   * or `redis+cluster://[user:password@]host:port[,host:port...]` (`rediss+...` for TLS).
   * Options (ms): watchdogTimeoutMs (default 30000), responseTimeoutMs, connectTimeoutMs, retryWindowMs;
   * driftFactor (fraction of the lease, 0..0.5, default 0.01); behind Sentinel: sentinelUsername,
   * sentinelPassword (the sentinels' own credentials); behind Sentinel and on a Cluster:
   * replicaAck ('off', 'one' (default; true), 'majority', 'all'; false: 'off'), replicaAckAof
   * (WAITAOF), replicaAckTimeoutMs (default 1000, 1..600000); appName (connections are named
   * `ferrolock:<client id>:<appName>` in CLIENT LIST, and the app in holder notes);
   * holderNotes: when a holder leaves a note beside its hold for operators and waiters
   * (app, host, pid, label, since when): 'off', 'long' (default: holds that outlive
   * holderNoteAfterMs, default 1000) or 'always'; slowWaitLogMs: an acquire that has
   * waited this long logs (INFO, see setLogger) who holds the lock, and again each time
   * its wait doubles (default 10000; false: never).
   */
  static async connect(url, options) {
    if (typeof url !== 'string') throw new ArgumentTypeError(`the Redis URL must be a string, not ${typeOf(url)}`);
    const o = optionsObject(options, CONNECT);
    const nativeOptions = {
      watchdogTimeoutMs: ms(o.watchdogTimeoutMs, 'watchdogTimeoutMs'),
      responseTimeoutMs: ms(o.responseTimeoutMs, 'responseTimeoutMs'),
      connectTimeoutMs: ms(o.connectTimeoutMs, 'connectTimeoutMs'),
      retryWindowMs: ms(o.retryWindowMs, 'retryWindowMs'),
      driftFactor: fraction(o.driftFactor, 'driftFactor'),
      sentinelUsername: string(o.sentinelUsername, 'sentinelUsername'),
      sentinelPassword: string(o.sentinelPassword, 'sentinelPassword'),
      replicaAck: replicaAck(o.replicaAck),
      replicaAckAof: bool(o.replicaAckAof, 'replicaAckAof'),
      replicaAckTimeoutMs: ms(o.replicaAckTimeoutMs, 'replicaAckTimeoutMs'),
      appName: string(o.appName, 'appName'),
      holderNotes: holderNotes(o.holderNotes),
      holderNoteAfterMs: ms(o.holderNoteAfterMs, 'holderNoteAfterMs'),
      slowWaitLogMs: o.slowWaitLogMs === false ? false : ms(o.slowWaitLogMs, 'slowWaitLogMs'),
    };
    return new Client(await call(() => native.connect(url, nativeOptions)));
  }

  /** This client's id (UUID v4), the first half of every owner field it writes. */
  get id() {
    return this.#native.id;
  }

  /** True from the moment close() is called. */
  get closed() {
    return this.#native.closed;
  }

  /** `{ holderId, owner, label }` of a lock's options, checked. */
  static #holder(options) {
    const o = optionsObject(options, LOCK);
    let holderId = o.holderId;
    if (holderId !== undefined && holderId !== null) {
      if (typeof holderId === 'bigint') holderId = Number(holderId);
      if (typeof holderId !== 'number') {
        throw new ArgumentTypeError(`holderId must be a number or a bigint, not ${typeOf(o.holderId)}`);
      }
      if (!Number.isSafeInteger(holderId) || holderId < 0) {
        throw new InvalidArgumentError(`holderId must be a non-negative safe integer, not ${o.holderId}`);
      }
    } else holderId = undefined;
    if (o.owner !== undefined && o.owner !== null && typeof o.owner !== 'string') {
      throw new ArgumentTypeError(`owner must be a string, not ${typeOf(o.owner)}`);
    }
    return { holderId, owner: o.owner ?? undefined, label: label(o.label) };
  }

  /** A Lock over the native lock handle `id` of this client. */
  #wrap(id, label) {
    return new Lock(id, this.#held, { label });
  }

  /** A handle on `name` of `kind` (the core's name of a lock kind). */
  #lock(name, kind, options) {
    const raw = rawName(name, 'a lock');
    const { holderId, owner, label } = Client.#holder(options);
    return this.#wrap(callSync(() => this.#native.lock(raw, kind, holderId, owner)), label);
  }

  /** A reentrant lock handle for `name`. The handle is the holder. */
  /**
   * A new candidate in the leader election `name` (an Election): the fenced lock of
   * that name for a holder of its own. `label` names it in its leader note.
   */
  election(name, options) {
    const raw = rawName(name, 'an election');
    const o = optionsObject(options, ELECTION);
    const nativeElection = callSync(() => this.#native.election(raw));
    return new Election(nativeElection, this.#wrap(nativeElection.lockId, label(o.label)));
  }

  lock(name, options) {
    return this.#lock(name, 'reentrant', options);
  }

  /** A fenced lock handle: every acquisition yields a strictly increasing bigint token. */
  fencedLock(name, options) {
    return this.#lock(name, 'fenced', options);
  }

  /** A fair lock handle (Redisson's `RFairLock`): granted in arrival order, across clients. */
  fairLock(name, options) {
    return this.#lock(name, 'fair', options);
  }

  /**
   * The read-write lock `name` (Redisson's `RReadWriteLock`): `readLock()` and
   * `writeLock()` are Locks on one holder (new, or the one `holderId` / `owner` pick).
   */
  readWriteLock(name, options) {
    const raw = rawName(name, 'a lock');
    const { holderId, owner, label } = Client.#holder(options);
    const [read, write] = callSync(() => this.#native.readWriteLock(raw, holderId, owner));
    return new ReadWriteLock(kCreate, this.#wrap(read, label), this.#wrap(write, label));
  }

  /** The semaphore `name` (Redisson's `RSemaphore`): permits nobody owns. */
  semaphore(name) {
    const raw = rawName(name, 'a semaphore');
    return new Semaphore(kCreate, callSync(() => this.#native.semaphore(raw)));
  }

  /** The permit-expirable semaphore `name` (Redisson's `RPermitExpirableSemaphore`): permits with ids and leases. */
  permitExpirableSemaphore(name) {
    const raw = rawName(name, 'a permit-expirable semaphore');
    return new PermitExpirableSemaphore(kCreate, callSync(() => this.#native.permitExpirableSemaphore(raw)));
  }

  /** The count-down latch `name` (Redisson's `RCountDownLatch`). */
  countDownLatch(name) {
    const raw = rawName(name, 'a count-down latch');
    return new CountDownLatch(kCreate, callSync(() => this.#native.countDownLatch(raw)));
  }

  /** Lock channels this client's pub/sub connection is subscribed to right now: those with
   * waiting acquires, and for 100 ms those whose last waiter left. */
  subscribedChannels() {
    return this.#native.subscribedChannels();
  }

  /** Locks this client holds right now. */
  heldCount() {
    return this.#native.heldCount();
  }

  /**
   * What this client's locks did since it connected: acquires by outcome, wait and hold
   * times (histograms in seconds), holds and waiters now, renewals, losses, reconnects.
   * A snapshot (a plain object); still readable after close().
   */
  metrics() {
    return callSync(() => this.#native.metrics());
  }

  /**
   * What `name` is, told from its keys (a lock, fenced, fair or read-write lock, a semaphore,
   * a permit-expirable semaphore or a count-down latch), and what is going on there:
   * `{ name, kind, holders: [{ owner, count, info }], leaseLeftMs, waiters, queue, mode,
   * permits, permitsOut: [{ id, leaseLeftMs }], count, lastToken, evictionPolicy }` (`null`
   * for what is not there; `evictionPolicy`: the server's maxmemory-policy when it may evict
   * the name's keys). `kind` reads it as that kind. WrongTypeError if the key holds something else.
   */
  async inspect(name, kind) {
    if (kind != null && typeof kind !== 'string') throw new ArgumentTypeError(`kind must be a string, not ${typeOf(kind)}`);
    const s = await call(() => this.#native.inspect(rawName(name, 'the'), kind ?? null));
    return {
      name: s.name,
      kind: s.kind,
      holders: s.holders.map(holder),
      leaseLeftMs: s.leaseLeftMs ?? null,
      waiters: s.waiters,
      queue: s.queue,
      mode: s.mode ?? null,
      permits: s.permits ?? null,
      permitsOut: s.permitsOut.map((p) => ({ id: p.id, leaseLeftMs: p.leaseLeftMs ?? null })),
      count: s.count ?? null,
      lastToken: s.lastToken ?? null,
      evictionPolicy: s.evictionPolicy ?? null,
    };
  }

  /**
   * The names of every lock-family object whose name starts with `prefix` (all of them
   * without one), sorted: one SCAN pass over the server, Sentinel's master or every master
   * of a cluster.
   */
  async scan(prefix = '') {
    return call(() => this.#native.scan(rawName(prefix, 'the prefix')));
  }

  /** `metrics()` in Prometheus' text exposition format (names `ferrolock_*`, label `client`). */
  metricsText() {
    return callSync(() => this.#native.metricsText());
  }

  /** Releases every lock this client holds, stops its waits, closes its connections. */
  async close() {
    try {
      await call(() => this.#native.close());
    } finally {
      this.#host.close();
      this.#held.clear();
    }
  }

  async [asyncDispose]() {
    await this.close();
  }

  [inspect.custom](depth, options, inspectValue) {
    const state = { id: this.id, closed: this.closed };
    if (depth < 0) return options.stylize(`[Client ${state.id}]`, 'special');
    return `Client ${inspectValue(state, options)}`;
  }
}

/** The holderNotes option, checked (core reads the name too; this message lists them). */
/** The replicaAck option, checked: a policy's name, or a boolean (true is 'one', false 'off'). */
function replicaAck(policy) {
  if (policy === undefined || policy === null) return undefined;
  if (typeof policy === 'boolean') return policy;
  if (typeof policy !== 'string') {
    throw new ArgumentTypeError(`replicaAck must be 'off', 'one', 'majority', 'all' or a boolean, not ${typeOf(policy)}`);
  }
  if (!REPLICA_ACK.includes(policy)) {
    throw new InvalidArgumentError(`replicaAck = ${JSON.stringify(policy)}; give 'off', 'one' (the default), 'majority', 'all' or a boolean`);
  }
  return policy;
}

function holderNotes(mode) {
  if (mode === undefined || mode === null) return undefined;
  if (typeof mode !== 'string') throw new ArgumentTypeError(`holderNotes must be a string, not ${typeOf(mode)}`);
  if (!HOLDER_NOTES.includes(mode)) {
    throw new InvalidArgumentError(`holderNotes = ${JSON.stringify(mode)}; give 'off', 'long' (the default) or 'always'`);
  }
  return mode;
}

/** A lock's label option: a string, or absent (`null`: none). Its length is core's to check. */
function label(value) {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new ArgumentTypeError(`label must be a string, not ${typeOf(value)}`);
  return value;
}

module.exports = { Client, CONNECT_KEYS };
