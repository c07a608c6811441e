'use strict';
// The client: connects, makes lock handles, routes lost notifications to them.

const native = require('./native');
const { asyncDispose } = require('./dispose');
const { InvalidArgumentError, call, callSync } = require('./errors');
const { optionsObject, ms, fraction, bool, string } = require('./options');
const { Lock, HeldLocks, lostEvent } = require('./lock');

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
    nativeClient.setLostHandler((lockId, seq, message) => {
      const lock = this.#locks.get(lockId)?.deref();
      if (lock) lock[lostEvent](seq, message);
    });
  }

  /**
   * Connects to Redis: `redis://[user:password@]host[:port][/db]` or `rediss://...` (one
   * server, or a cluster's seed), `redis+sentinel://[user:password@]host:port[,host:port...]/<master>[/<db>]`
   * or `redis+cluster://[user:password@]host:port[,host:port...]` (`rediss+...` for TLS).
   * Options (ms): watchdogTimeoutMs (default 30000), responseTimeoutMs, connectTimeoutMs, retryWindowMs;
   * driftFactor (fraction of the lease, 0..0.5, default 0.01); behind Sentinel: sentinelUsername,
   * sentinelPassword (the sentinels' own credentials), replicaAck (default true),
   * replicaAckTimeoutMs (default 1000, 1..600000).
   */
  static async connect(url, options) {
    if (typeof url !== 'string') throw new InvalidArgumentError('the Redis URL must be a string');
    const o = optionsObject(options, 'connect');
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
    };
    return new Client(await call(() => native.connect(url, nativeOptions)));
  }

  /** This client's id (UUID v4), the first half of every owner field it writes. */
  get id() {
    return this.#native.id;
  }

  /** True after close(). */
  get closed() {
    return this.#native.closed;
  }

  /** A handle on `name` of `kind` (the core's name of a lock kind). */
  #lock(name, kind, options) {
    if (typeof name !== 'string' && !(name instanceof Uint8Array)) {
      throw new InvalidArgumentError('a lock name must be a string or a Uint8Array');
    }
    const o = optionsObject(options, 'lock');
    let holderId = o.holderId;
    if (holderId !== undefined && holderId !== null) {
      if (typeof holderId === 'bigint') holderId = Number(holderId);
      if (!Number.isSafeInteger(holderId) || holderId < 0) {
        throw new InvalidArgumentError(`holderId must be a non-negative safe integer, not ${o.holderId}`);
      }
    } else holderId = undefined;
    if (o.owner !== undefined && o.owner !== null && typeof o.owner !== 'string') {
      throw new InvalidArgumentError('owner must be a string');
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
}

module.exports = { Client };
