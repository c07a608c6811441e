'use strict';
// The client: connects, makes lock handles, routes lost notifications to them.

const { inspect } = require('node:util');
const native = require('./native');
const { asyncDispose } = require('./dispose');
const { InvalidArgumentError, ArgumentTypeError, call, callSync } = require('./errors');
const { optionKeys, optionsObject, typeOf, ms, fraction, bool, string } = require('./options');
const { Lock, HeldLocks, lostEvent } = require('./lock');

const CONNECT_KEYS = [
  'watchdogTimeoutMs',
  'responseTimeoutMs',
  'connectTimeoutMs',
  'retryWindowMs',
  'driftFactor',
  'sentinelUsername',
  'sentinelPassword',
  'replicaAck',
  'replicaAckTimeoutMs',
  'appName',
];
const CONNECT = optionKeys('connect', CONNECT_KEYS);
const LOCK = optionKeys('lock', ['holderId', 'owner']);

class Client {
  #native;
  #locks = new Map(); // native lock id -> WeakRef<Lock>, for 'lost' events
  #registry = new FinalizationRegistry((id) => this.#locks.delete(id));
  #held = new HeldLocks(); // the locks that hold: kept reachable until their hold ends
  // What a lock of this client (and a multi-lock over it) needs of the client.
  #home = {
    held: this.#held,
    adopt: (lock, id) => {
      this.#locks.set(id, new WeakRef(lock));
      this.#registry.register(lock, id);
    },
  };

  constructor(nativeClient) {
    if (!nativeClient || typeof nativeClient.lock !== 'function') {
      throw new InvalidArgumentError('use `await Client.connect(url, options)` to make a client');
    }
    this.#native = nativeClient;
    nativeClient.setLostHandler((lockId, seq, message, reason) => {
      const lock = this.#locks.get(lockId)?.deref();
      if (lock) lock[lostEvent](seq, message, reason);
    });
  }

  /**
   * Connects to Redis: `redis://[user:password@]host[:port][/db]` or `rediss://...` (one
   * server, or a cluster's seed), `redis+sentinel://[user:password@]host:port[,host:port...]/<master>[/<db>]`
   * or `redis+cluster://[user:password@]host:port[,host:port...]` (`rediss+...` for TLS).
   * Options (ms): watchdogTimeoutMs (default 30000), responseTimeoutMs, connectTimeoutMs, retryWindowMs;
   * driftFactor (fraction of the lease, 0..0.5, default 0.01); behind Sentinel: sentinelUsername,
   * sentinelPassword (the sentinels' own credentials), replicaAck (default true),
   * replicaAckTimeoutMs (default 1000, 1..600000); appName (connections are named
   * `ferrolock:<client id>:<appName>` in CLIENT LIST).
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
      replicaAck: bool(o.replicaAck, 'replicaAck'),
      replicaAckTimeoutMs: ms(o.replicaAckTimeoutMs, 'replicaAckTimeoutMs'),
      appName: string(o.appName, 'appName'),
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

  /** A handle on `name` of `kind` (the core's name of a lock kind). */
  #lock(name, kind, options) {
    if (typeof name !== 'string' && !(name instanceof Uint8Array)) {
      throw new ArgumentTypeError(`a lock name must be a string or a Uint8Array, not ${typeOf(name)}`);
    }
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
    const raw = typeof name === 'string' ? name : Buffer.from(name.buffer, name.byteOffset, name.byteLength);
    const nativeLock = callSync(() => this.#native.lock(raw, kind, holderId, o.owner ?? undefined));
    const lock = new Lock(nativeLock, this.#held, { home: this.#home });
    this.#home.adopt(lock, nativeLock.id);
    return lock;
  }

  /** A reentrant lock handle for `name`. The handle is the holder. */
  lock(name, options) {
    return this.#lock(name, 'reentrant', options);
  }

  /** A fenced lock handle: every acquisition yields a strictly increasing bigint token. */
  fencedLock(name, options) {
    return this.#lock(name, 'fenced', options);
  }

  /** Lock channels this client's pub/sub connection is subscribed to right now. */
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

  /** `metrics()` in Prometheus' text exposition format (names `ferrolock_*`, label `client`). */
  metricsText() {
    return callSync(() => this.#native.metricsText());
  }

  /** Releases every lock this client holds, stops its waits, closes its connections. */
  async close() {
    try {
      await call(() => this.#native.close());
    } finally {
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

module.exports = { Client, CONNECT_KEYS };
