'use strict';
// ferrolock for Node.js: a thin layer over the native addon (ferrolock.node).
// It turns native error codes into FerrolockError subclasses, wires AbortSignal
// into a native cancel handle, turns lost-hold notifications into 'lost' events
// and aborted signals, keeps lock objects that hold reachable from their client,
// and adds Symbol.asyncDispose. The lock logic is in Rust.

const { EventEmitter } = require('node:events');
const path = require('node:path');

let native;
try {
  native = require(path.join(__dirname, 'ferrolock.node'));
} catch (e) {
  throw new Error(
    `ferrolock: cannot load the native addon (${e.message}); ` +
      'build it with `npm run build` in the ferrolock package (needs a Rust toolchain)',
    { cause: e },
  );
}

// Node 20 has no Symbol.asyncDispose; TypeScript's `await using` down-level looks it up
// on Symbol. Define it (under the registered key other polyfills use) when missing.
if (typeof Symbol.asyncDispose !== 'symbol') {
  Object.defineProperty(Symbol, 'asyncDispose', {
    value: Symbol.for('Symbol.asyncDispose'),
    writable: false,
    enumerable: false,
    configurable: false,
  });
}
const asyncDispose = Symbol.asyncDispose;

// ---------------------------------------------------------------------------
// errors (DESIGN §4)

class FerrolockError extends Error {
  constructor(message, code, options) {
    super(message, options);
    this.name = 'FerrolockError';
    this.code = code;
  }
}

function defineError(className, code, name = className) {
  const cls = class extends FerrolockError {
    constructor(message, options) {
      super(message, code, options);
      this.name = name;
    }
  };
  Object.defineProperty(cls, 'name', { value: className });
  Object.defineProperty(cls, 'code', { value: code });
  return cls;
}

const NotAcquiredError = defineError('NotAcquiredError', 'ERR_NOT_ACQUIRED');
const NotOwnerError = defineError('NotOwnerError', 'ERR_NOT_OWNER');
const LockLostError = defineError('LockLostError', 'ERR_LOCK_LOST');
const ConnectionError = defineError('ConnectionError', 'ERR_CONNECTION');
const WrongTypeError = defineError('WrongTypeError', 'ERR_WRONG_TYPE');
const InvalidArgumentError = defineError('InvalidArgumentError', 'ERR_INVALID_ARGUMENT');
const PermissionDeniedError = defineError('PermissionDeniedError', 'ERR_PERMISSION');
const CancelledError = defineError('CancelledError', 'ERR_CANCELLED', 'AbortError');
const InternalError = defineError('InternalError', 'ERR_INTERNAL');

const byCode = {
  NOT_ACQUIRED: NotAcquiredError,
  ERR_NOT_ACQUIRED: NotAcquiredError,
  ERR_NOT_OWNER: NotOwnerError,
  ERR_LOCK_LOST: LockLostError,
  ERR_CONNECTION: ConnectionError,
  ERR_WRONG_TYPE: WrongTypeError,
  ERR_INVALID_ARGUMENT: InvalidArgumentError,
  ERR_PERMISSION: PermissionDeniedError,
  ERR_CANCELLED: CancelledError,
  ERR_INTERNAL: InternalError,
};

const CODED = /^\[([A-Z_]+)\] ([\s\S]*)$/;

/** Native errors arrive as "[CODE] message": make the matching FerrolockError. */
function convert(e) {
  if (e instanceof FerrolockError) return e;
  const m = e && typeof e.message === 'string' ? CODED.exec(e.message) : null;
  if (m && byCode[m[1]]) return new byCode[m[1]](m[2]);
  return new InternalError(`ferrolock: unexpected error from the native addon: ${e && e.message}`, { cause: e });
}

async function call(promiseFn) {
  try {
    return await promiseFn();
  } catch (e) {
    throw convert(e);
  }
}

function callSync(fn) {
  try {
    return fn();
  } catch (e) {
    throw convert(e);
  }
}

// ---------------------------------------------------------------------------
// argument checks (ranges are checked in Rust by ferrolock::validate)

function optionsObject(options, what) {
  if (options === undefined || options === null) return {};
  if (typeof options !== 'object') throw new InvalidArgumentError(`${what} options must be an object, not ${typeof options}`);
  return options;
}

function ms(value, what) {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || Number.isNaN(value)) {
    throw new InvalidArgumentError(`${what} must be a number of milliseconds, not ${typeof value === 'number' ? value : typeof value}`);
  }
  return value;
}

function fraction(value, what) {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number') throw new InvalidArgumentError(`${what} must be a number, not ${typeof value}`);
  return value;
}

function checkSignal(signal) {
  if (signal === undefined || signal === null) return undefined;
  if (typeof signal !== 'object' || typeof signal.aborted !== 'boolean' || typeof signal.addEventListener !== 'function') {
    throw new InvalidArgumentError('signal must be an AbortSignal');
  }
  return signal;
}

function abortError(signal) {
  return new CancelledError('the wait for the lock was aborted; nothing is held', { cause: signal.reason });
}

// ---------------------------------------------------------------------------
// AbortSignal -> native cancel handles. One 'abort' listener per signal, however
// many waits share it (1000 acquires on one signal add one listener, not 1000).

const signalWaits = new WeakMap(); // signal -> { ids: Set<cancelId>, onAbort }

function watchSignal(signal) {
  const id = native.newCancel();
  let entry = signalWaits.get(signal);
  if (!entry) {
    const ids = new Set();
    const onAbort = () => {
      signalWaits.delete(signal);
      for (const waiting of ids) native.cancel(waiting);
      ids.clear();
    };
    entry = { ids, onAbort };
    signalWaits.set(signal, entry);
    signal.addEventListener('abort', onAbort, { once: true });
  }
  entry.ids.add(id);
  return id;
}

function unwatchSignal(signal, id) {
  native.cancel(id); // frees the handle (a no-op when the native acquire already did)
  const entry = signalWaits.get(signal);
  if (!entry) return;
  entry.ids.delete(id);
  if (entry.ids.size === 0) {
    signalWaits.delete(signal);
    signal.removeEventListener('abort', entry.onAbort);
  }
}

// ---------------------------------------------------------------------------
// lock objects that hold

const kNative = Symbol('native');

/**
 * The lock objects of one client that hold right now. The client keeps them
 * reachable: a hold never ends because its lock object was garbage-collected
 * (core keeps the hold itself anyway), and its 'lost' event still has a listener
 * to reach. A lock leaves when its hold ends (released, lost, client closed), and
 * is then collectable again.
 */
class HeldLocks {
  #locks = new Set();
  #sweepAt = 64;

  /** After an acquire, release or loss of `lock`: keeps it while core says it holds. */
  update(lock) {
    if (lock[kNative].localHoldCount > 0) {
      if (this.#locks.has(lock)) return;
      this.#locks.add(lock);
      if (this.#locks.size >= this.#sweepAt) this.#sweep();
    } else {
      this.#locks.delete(lock);
    }
  }

  // Lock objects on one holder (the same holderId) share its hold: a release
  // through one ends the others' too, without telling them. Amortized O(1) per add.
  #sweep() {
    for (const lock of this.#locks) {
      if (lock[kNative].localHoldCount === 0) this.#locks.delete(lock);
    }
    this.#sweepAt = Math.max(64, 2 * this.#locks.size);
  }

  clear() {
    this.#locks.clear();
    this.#sweepAt = 64;
  }
}

// ---------------------------------------------------------------------------
// holds and locks

/** One acquisition, returned by `lock.acquire()`. */
class Hold {
  #lock;
  #state;
  #released = false;

  constructor(lock, info, state) {
    this.#lock = lock;
    this.#state = state;
    /** Fencing token of this acquisition (fenced locks), else null. */
    this.token = info.token ?? null;
    /** Hold count right after this acquisition (1 = a new hold). */
    this.holdCount = info.count;
    Object.freeze(this);
  }

  /** The lock handle this hold belongs to. */
  get lock() {
    return this.#lock;
  }

  /** Aborted (with a LockLostError as reason) when this hold is lost. */
  get signal() {
    return this.#state.controller.signal;
  }

  /** True once this hold was lost. */
  get lost() {
    return this.#state.controller.signal.aborted;
  }

  /** True once `release()` (or dispose) ran for this hold. */
  get released() {
    return this.#released;
  }

  /** Releases this acquisition (one level). A second call does nothing. */
  async release() {
    if (this.#released) return;
    this.#released = true;
    await this.#lock.release();
  }

  async [asyncDispose]() {
    await this.release();
  }
}

const lostEvent = Symbol('lostEvent');

class Lock extends EventEmitter {
  #native;
  #held; // the client's HeldLocks
  #state; // { seq, controller } of the current (or latest, or next) hold
  #early = null; // { seq, message }: a loss told before the acquire that made that hold returned

  constructor(nativeLock, held) {
    super();
    this.#native = nativeLock;
    this.#held = held;
    this.#state = { seq: null, controller: new AbortController() };
  }

  get [kNative]() {
    return this.#native;
  }

  /** The lock name. */
  get name() {
    return this.#native.name;
  }

  /** The owner field this holder writes: `<client-id>:<holder-id>`. */
  get owner() {
    return this.#native.owner;
  }

  /** True for fenced locks. */
  get fenced() {
    return this.#native.fenced;
  }

  /** Fencing token of the current hold (fenced locks), else null. */
  get token() {
    return this.#native.token ?? null;
  }

  /** True if the latest hold of this handle was lost (until it acquires again). */
  get lost() {
    return this.#native.lost;
  }

  /** Aborted when the current hold is lost. Before the first acquire: the next hold's signal. */
  get signal() {
    return this.#state.controller.signal;
  }

  #hold(info) {
    if (info.seq !== this.#state.seq) {
      // A new hold: its own signal (the unused initial one, or a fresh one).
      if (this.#state.seq !== null) this.#state = { seq: info.seq, controller: new AbortController() };
      else this.#state.seq = info.seq;
    }
    const hold = new Hold(this, info, this.#state);
    if (this.#early !== null && this.#early.seq === info.seq) {
      // Lost right after it was taken: the notification overtook the acquire's reply.
      const { message } = this.#early;
      this.#early = null;
      this.#lost(message);
    }
    return hold;
  }

  [lostEvent](seq, message) {
    if (seq === this.#state.seq) this.#lost(message);
    else if (this.#native.localHoldCount === 0) this.#early = { seq, message }; // maybe a hold whose acquire is still to return
    this.#held.update(this);
  }

  #lost(message) {
    const err = new LockLostError(message);
    // Format the stack now: until then V8 keeps the frames' receivers (this lock),
    // and a kept error (a signal's reason) would keep a lost lock object alive.
    void err.stack;
    if (!this.#state.controller.signal.aborted) {
      this.#state.controller.abort(err);
      this.emit('lost', err);
    }
  }

  async #acquire(waitMs, leaseMs, signal) {
    if (signal && signal.aborted) throw abortError(signal);
    const cancelId = signal ? watchSignal(signal) : undefined;
    try {
      const info = await this.#native.acquire(waitMs, leaseMs, cancelId);
      return info ? this.#hold(info) : null;
    } catch (e) {
      const err = convert(e);
      if (err.code === 'ERR_CANCELLED' && signal && signal.aborted) throw abortError(signal);
      throw err;
    } finally {
      if (signal) unwatchSignal(signal, cancelId);
      this.#held.update(this);
    }
  }

  /**
   * Waits until acquired (watchdog lease unless `leaseMs`). `signal` aborts the wait
   * (rejects with AbortError, code ERR_CANCELLED). With `waitMs`, rejects with
   * NotAcquiredError when that runs out.
   */
  async acquire(options) {
    const o = optionsObject(options, 'acquire');
    const waitMs = ms(o.waitMs, 'waitMs');
    const hold = await this.#acquire(waitMs, ms(o.leaseMs, 'leaseMs'), checkSignal(o.signal));
    if (!hold) {
      throw new NotAcquiredError(`lock "${this.name}" was not acquired within ${waitMs} ms; it is held by someone else`);
    }
    return hold;
  }

  /** One attempt, or waits up to `waitMs` (default 0). Resolves true when acquired. */
  async tryAcquire(options) {
    const o = optionsObject(options, 'tryAcquire');
    const waitMs = ms(o.waitMs, 'waitMs') ?? 0;
    return (await this.#acquire(waitMs, ms(o.leaseMs, 'leaseMs'), checkSignal(o.signal))) !== null;
  }

  /** Releases one level. Rejects with ERR_NOT_OWNER if this handle does not hold it. */
  async release() {
    try {
      await call(() => this.#native.release());
    } finally {
      this.#held.update(this);
    }
  }

  /** Releases every level of this handle's hold. */
  async releaseAll() {
    try {
      await call(() => this.#native.releaseAll());
    } finally {
      this.#held.update(this);
    }
  }

  /** True if anyone holds the lock. */
  isLocked() {
    return call(() => this.#native.isLocked());
  }

  /** True if this handle holds the lock (as the server sees it). */
  isHeld() {
    return call(() => this.#native.isHeld());
  }

  /** This handle's hold count (as the server sees it). */
  holdCount() {
    return call(() => this.#native.holdCount());
  }

  /** Ms left on the lock's lease (whoever holds it); null when not locked. */
  remainingLeaseMs() {
    return call(() => this.#native.remainingLeaseMs());
  }

  /** Deletes the lock whoever holds it and wakes a waiter. True if it was locked. */
  forceUnlock() {
    return call(() => this.#native.forceUnlock());
  }

  /**
   * Acquires, runs `fn(signal, hold)`, and always releases. `signal` aborts if the hold
   * is lost meanwhile. With `waitMs`, rejects with NotAcquiredError when that runs out.
   */
  async using(fn, options) {
    if (typeof fn !== 'function') throw new InvalidArgumentError('using() needs a function');
    const hold = await this.acquire(options);
    let result;
    try {
      result = await fn(hold.signal, hold);
    } catch (e) {
      try {
        await hold.release();
      } catch {
        // The error of fn is the one to report.
      }
      throw e;
    }
    await hold.release();
    return result;
  }
}

// ---------------------------------------------------------------------------
// client

class Client {
  #native;
  #locks = new Map(); // native lock id -> WeakRef<Lock>, for 'lost' events
  #registry = new FinalizationRegistry((id) => this.#locks.delete(id));
  #held = new HeldLocks(); // the locks that hold: kept reachable until their hold ends

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
   * Connects to Redis: `redis://[user:password@]host[:port][/db]` or `rediss://...`.
   * Options (ms): watchdogTimeoutMs (default 30000), responseTimeoutMs, connectTimeoutMs, retryWindowMs;
   * driftFactor (fraction of the lease, 0..0.5, default 0.01).
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

  #lock(name, fenced, options) {
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
    const nativeLock = callSync(() => this.#native.lock(raw, fenced, holderId, o.owner ?? undefined));
    const lock = new Lock(nativeLock, this.#held);
    this.#locks.set(nativeLock.id, new WeakRef(lock));
    this.#registry.register(lock, nativeLock.id);
    return lock;
  }

  /** A reentrant lock handle for `name`. The handle is the holder. */
  lock(name, options) {
    return this.#lock(name, false, options);
  }

  /** A fenced lock handle: every acquisition yields a strictly increasing bigint token. */
  fencedLock(name, options) {
    return this.#lock(name, true, options);
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

module.exports = {
  Client,
  Lock,
  Hold,
  FerrolockError,
  NotAcquiredError,
  NotOwnerError,
  LockLostError,
  ConnectionError,
  WrongTypeError,
  InvalidArgumentError,
  PermissionDeniedError,
  CancelledError,
  AbortError: CancelledError,
  InternalError,
};
