'use strict';
// The rest of Redisson's family in three shapes besides Lock: the semaphore (permits
// nobody owns, taken and given back by count), the permit-expirable semaphore
// (permits with ids and optional leases) and the count-down latch. A read-write lock
// is two Locks on one holder (ReadWriteLock). What a caller holds (Permits, Permit)
// is plain data here; giving it back is one native call by count or by id, and
// garbage collection never gives anything back (permits are not owned: a lost
// object's permits stay out, like Redisson's).

const { inspect } = require('node:util');
const { asyncDispose } = require('./dispose');
const { ArgumentTypeError, InvalidArgumentError, NotAcquiredError, call } = require('./errors');
const { optionKeys, optionsObject, typeOf, ms, count, checkSignal } = require('./options');
const { abortable } = require('./abort');

const SEM_ACQUIRE = optionKeys('semaphore.acquire', ['permits', 'waitMs', 'signal']);
const SEM_USING = optionKeys('semaphore.using', ['permits', 'waitMs', 'signal']);
const PERMIT_ACQUIRE = optionKeys('permitExpirableSemaphore.acquire', ['waitMs', 'leaseMs', 'signal']);
const PERMIT_USING = optionKeys('permitExpirableSemaphore.using', ['waitMs', 'leaseMs', 'signal']);
const LATCH_WAIT = optionKeys('countDownLatch.wait', ['waitMs', 'signal']);

const kCreate = Symbol('create');
// What a semaphore class gives its base: taking with checked options (the Permits or
// Permit, or null when not free in time), and what using() says then.
const kTake = Symbol('take');
const kNotFree = Symbol('notFree');

/** A count the call cannot do without (its range is core's). */
function needed(value, what, call) {
  if (value === undefined || value === null) throw new ArgumentTypeError(`${call}() needs ${what}, a whole number`);
  return count(value, what);
}

function checkHandle(key, nativeHandle, how) {
  if (key !== kCreate || !nativeHandle) throw new InvalidArgumentError(`use ${how} to make one`);
}

/** Runs `fn(held)` and always gives `held` back; `fn`'s error wins over a failed give-back. */
async function holding(held, fn) {
  let result;
  try {
    result = await fn(held);
  } catch (e) {
    try {
      await held.release();
    } catch {
      // The error of fn is the one to report.
    }
    throw e;
  }
  await held.release();
  return result;
}

/** Permits taken by `semaphore.acquire()`: give them back with `release()` or `await using`. */
class Permits {
  #semaphore;
  #released = false;

  constructor(key, semaphore, n) {
    checkHandle(key, semaphore, 'semaphore.acquire()');
    this.#semaphore = semaphore;
    /** How many permits these are. */
    this.count = n;
    Object.freeze(this);
  }

  /** The semaphore they were taken from. */
  get semaphore() {
    return this.#semaphore;
  }

  /** True once `release()` (or dispose) ran. */
  get released() {
    return this.#released;
  }

  /** Gives them back (and wakes waiters). A second call does nothing. */
  async release() {
    if (this.#released) return;
    this.#released = true;
    await this.#semaphore.release(this.count);
  }

  async [asyncDispose]() {
    await this.release();
  }

  [inspect.custom](depth, options, inspectValue) {
    const state = { semaphore: this.#semaphore.name, count: this.count, released: this.#released };
    if (depth < 0) return options.stylize(`[Permits ${state.semaphore}]`, 'special');
    return `Permits ${inspectValue(state, options)}`;
  }
}

let nativeOf;

/**
 * What both semaphores share: the native handle and its name, trySetPermits, the
 * option checks of acquire() and using(), using() itself, available(), inspect.
 */
class SemaphoreBase {
  #native;
  #optionKeys;

  static {
    // The subclasses reach the native handle through this; nothing outside the module can.
    nativeOf = (semaphore) => semaphore.#native;
  }

  constructor(key, nativeSemaphore, how, optionKeys) {
    checkHandle(key, nativeSemaphore, how);
    this.#native = nativeSemaphore;
    this.#optionKeys = optionKeys;
  }

  get name() {
    return this.#native.name;
  }

  /** Gives the semaphore `permits` free permits if it does not exist yet; false if it does (left alone). */
  async trySetPermits(permits) {
    return call(() => this.#native.trySetPermits(needed(permits, 'permits', 'trySetPermits')));
  }

  acquire(options) {
    let o;
    try {
      o = optionsObject(options, this.#optionKeys.acquire);
    } catch (e) {
      return Promise.reject(e);
    }
    return this[kTake](o);
  }

  async using(fn, options) {
    if (typeof fn !== 'function') throw new ArgumentTypeError(`using() needs a function, not ${typeOf(fn)}`);
    const o = optionsObject(options, this.#optionKeys.using);
    const held = await this[kTake](o);
    if (!held) throw new NotAcquiredError(this[kNotFree](o));
    return holding(held, fn);
  }

  available() {
    return call(() => this.#native.available());
  }

  [inspect.custom](depth, options, inspectValue) {
    const kind = this.constructor.name;
    if (depth < 0) return options.stylize(`[${kind} ${this.name}]`, 'special');
    return `${kind} ${inspectValue({ name: this.name }, options)}`;
  }
}

/**
 * Redisson's `RSemaphore`: a count of free permits under one name. Permits are not
 * owned: anyone may give back any number (`release(n)`), and a process that ends
 * holding some does not give them back.
 *
 * `acquire()` takes `permits` (default 1), waiting as long as it takes, or at most
 * `waitMs`: it resolves with the Permits, or null when not enough were free in time;
 * `signal` aborts the wait (AbortError), taking nothing. `using(fn)` takes them, runs
 * `fn(permits)` and always gives them back (NotAcquiredError when `waitMs` runs out).
 * `available()`: the free permits now (0 for a semaphore that does not exist).
 */
class Semaphore extends SemaphoreBase {
  constructor(key, nativeSemaphore) {
    super(key, nativeSemaphore, 'client.semaphore(name)', { acquire: SEM_ACQUIRE, using: SEM_USING });
  }

  async [kTake](o) {
    const n = count(o.permits, 'permits') ?? 1;
    const waitMs = ms(o.waitMs, 'waitMs');
    const signal = checkSignal(o.signal);
    const taken = await abortable(
      (cancelId) => nativeOf(this).acquire(n, waitMs, cancelId),
      signal,
      `the wait for ${n} permit(s) of semaphore "${this.name}" was aborted; nothing was taken`,
    );
    return taken ? new Permits(kCreate, this, n) : null;
  }

  [kNotFree](o) {
    return `${o.permits ?? 1} permit(s) of semaphore "${this.name}" were not free within ${o.waitMs} ms`;
  }

  /** Gives `permits` (default 1) back, whoever took them; resolves with the free permits right after. */
  async release(permits) {
    return call(() => nativeOf(this).release(count(permits, 'permits') ?? 1));
  }

  /** Takes every free permit; resolves with how many (give them back with `release(n)`). */
  drain() {
    return call(() => nativeOf(this).drain());
  }
}

/** One permit of a permit-expirable semaphore: release it with `release()` or `await using`. */
class Permit {
  #semaphore;
  #released = false;

  constructor(key, semaphore, id, leaseMs) {
    checkHandle(key, semaphore, 'permitExpirableSemaphore.acquire()');
    this.#semaphore = semaphore;
    /** Its id, 32 hex digits (as Redisson shows them); `semaphore.release(id)` releases it from anywhere. */
    this.id = id;
    /** The lease it was taken with (it comes back by itself after that), else null. */
    this.leaseMs = leaseMs ?? null;
    Object.freeze(this);
  }

  /** The semaphore it was taken from. */
  get semaphore() {
    return this.#semaphore;
  }

  /** True once `release()` (or dispose) ran. */
  get released() {
    return this.#released;
  }

  /**
   * Releases it: true if it was still out and in time, false if its lease had run out
   * (it came back anyway) or it was released already.
   */
  async release() {
    if (this.#released) return false;
    this.#released = true;
    return this.#semaphore.release(this.id);
  }

  async [asyncDispose]() {
    await this.release();
  }

  [inspect.custom](depth, options, inspectValue) {
    const state = { semaphore: this.#semaphore.name, id: this.id, leaseMs: this.leaseMs, released: this.#released };
    if (depth < 0) return options.stylize(`[Permit ${state.id}]`, 'special');
    return `Permit ${inspectValue(state, options)}`;
  }
}

/**
 * Redisson's `RPermitExpirableSemaphore`: permits with ids and optional leases. A
 * permit whose lease runs out comes back by itself; a waiter wakes by a release
 * message or by the nearest expiry.
 *
 * `acquire()` takes a permit, waiting as long as it takes or at most `waitMs`, with
 * an optional `leaseMs`: it resolves with the Permit, or null when none was free in
 * time; `signal` aborts the wait (AbortError), taking nothing. `using(fn)` takes one,
 * runs `fn(permit)` and always releases it (NotAcquiredError when `waitMs` runs out).
 * `available()`: the free permits now, after the expired ones came back.
 */
class PermitExpirableSemaphore extends SemaphoreBase {
  constructor(key, nativeSemaphore) {
    super(key, nativeSemaphore, 'client.permitExpirableSemaphore(name)', { acquire: PERMIT_ACQUIRE, using: PERMIT_USING });
  }

  async [kTake](o) {
    const waitMs = ms(o.waitMs, 'waitMs');
    const leaseMs = ms(o.leaseMs, 'leaseMs');
    const signal = checkSignal(o.signal);
    const id = await abortable(
      (cancelId) => nativeOf(this).acquire(waitMs, leaseMs, cancelId),
      signal,
      `the wait for a permit of permit-expirable semaphore "${this.name}" was aborted; nothing was taken`,
    );
    return id ? new Permit(kCreate, this, id, leaseMs) : null;
  }

  [kNotFree](o) {
    return `no permit of permit-expirable semaphore "${this.name}" was free within ${o.waitMs} ms`;
  }

  /**
   * Releases a permit by its id (a string, as `permit.id` or Redisson give it) or a
   * Permit object: true if it was out and in time, false if its lease had run out or
   * it was released already. Permits are not owned: any client may release any id.
   */
  async release(permit) {
    if (permit instanceof Permit) return permit.release();
    if (typeof permit !== 'string') {
      throw new ArgumentTypeError(`release() needs a Permit or a permit id (string), not ${typeOf(permit)}`);
    }
    return call(() => nativeOf(this).release(permit));
  }
}

/**
 * Redisson's `RCountDownLatch`: a count that opens the latch at 0, waking every
 * waiter. A latch that does not exist is open.
 */
class CountDownLatch {
  #native;

  constructor(key, nativeLatch) {
    checkHandle(key, nativeLatch, 'client.countDownLatch(name)');
    this.#native = nativeLatch;
  }

  get name() {
    return this.#native.name;
  }

  /** Sets the count (1 or more) of an open latch; false if it is still counting down (left alone). */
  async trySetCount(n) {
    return call(() => this.#native.trySetCount(needed(n, 'count', 'trySetCount')));
  }

  /** Counts down by one; resolves with the count left (0: now open). */
  countDown() {
    return call(() => this.#native.countDown());
  }

  /** The count now (0: open). */
  count() {
    return call(() => this.#native.count());
  }

  /**
   * Waits until open, as long as it takes or at most `waitMs`: resolves true when
   * open, false when still counting down then. `signal` aborts the wait (AbortError).
   */
  wait(options) {
    let o;
    try {
      o = optionsObject(options, LATCH_WAIT);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.#wait(o);
  }

  async #wait(o) {
    const waitMs = ms(o.waitMs, 'waitMs');
    const signal = checkSignal(o.signal);
    return abortable(
      (cancelId) => this.#native.wait(waitMs, cancelId),
      signal,
      `the wait for count-down latch "${this.name}" was aborted`,
    );
  }

  [inspect.custom](depth, options, inspectValue) {
    if (depth < 0) return options.stylize(`[CountDownLatch ${this.name}]`, 'special');
    return `CountDownLatch ${inspectValue({ name: this.name }, options)}`;
  }
}

/**
 * Redisson's `RReadWriteLock`: two Locks on one name and one holder. Many readers or
 * one writer; the writer may also take read holds (and keep them after it stops
 * writing), as Redisson allows.
 */
class ReadWriteLock {
  #read;
  #write;

  constructor(key, read, write) {
    checkHandle(key, read && write, 'client.readWriteLock(name)');
    this.#read = read;
    this.#write = write;
  }

  get name() {
    return this.#read.name;
  }

  /** The read side: a Lock held by many readers at once, never with another holder's write. */
  readLock() {
    return this.#read;
  }

  /** The write side: a Lock held by one holder alone (its own read holds aside). */
  writeLock() {
    return this.#write;
  }

  [inspect.custom](depth, options, inspectValue) {
    if (depth < 0) return options.stylize(`[ReadWriteLock ${this.name}]`, 'special');
    return `ReadWriteLock ${inspectValue({ name: this.name, read: this.#read, write: this.#write }, options)}`;
  }
}

module.exports = { Semaphore, Permits, PermitExpirableSemaphore, Permit, CountDownLatch, ReadWriteLock, kCreate };
