'use strict';
// Lock handles and their holds: 'lost' events and aborted signals from the native
// lost notifications, and the client's set of lock objects that hold. A
// multi-lock (Lock.multi: Redlock or MultiLock over member locks on several
// clients) is a Lock too, known to each of its members' clients.

const { EventEmitter, getEventListeners } = require('node:events');
const { inspect } = require('node:util');
const native = require('./native');
const { asyncDispose } = require('./dispose');
const {
  InvalidArgumentError, ArgumentTypeError, LockLostError, NotAcquiredError, NotOwnerError, convert, call, callSync,
} = require('./errors');
const { optionKeys, optionsObject, typeOf, ms, bool, checkSignal } = require('./options');
const { abortError, watchSignal, unwatchSignal } = require('./abort');
const { holder } = require('./holder');

const kId = Symbol('id');
const kRouted = Symbol('routed');
const kAcquiring = Symbol('acquiring');
const COUNT_SPAN = 2 ** 21;
const lostEvent = Symbol('lostEvent');
const kTake = Symbol('take');

const ACQUIRE = optionKeys('acquire', ['waitMs', 'leaseMs', 'signal', 'label']);
const TRY_ACQUIRE = optionKeys('tryAcquire', ['waitMs', 'leaseMs', 'signal', 'label']);
const USING = optionKeys('using', ['waitMs', 'leaseMs', 'signal', 'label', 'minHoldMs']);
const MULTI = optionKeys('Lock.multi', ['quorum']);
const EXTEND = optionKeys('extend', ['replace']);

/**
 * The lock objects of one client that hold right now, by lock id: the client keeps
 * them reachable (a hold never ends because its lock object was garbage-collected,
 * and its 'lost' event still has a listener to reach) and routes their losses through
 * here. A lock is also here while an acquire of it is in flight (its loss may overtake
 * the reply) and while a loss of it is still to be told. Only these need routing: an
 * unheld lock costs its client nothing (issue 30: no WeakRef and finalization entry
 * per lock object).
 */
class HeldLocks {
  #locks = new Map();
  #sweepAt = 64;

  /** The lock with native id `id`, if its losses are routed now. */
  get(id) {
    return this.#locks.get(id);
  }

  /**
   * After an acquire, release or loss of `lock`: keeps it while it needs routing.
   * `count`: the hold count when the caller knows it (saves asking the addon).
   */
  update(lock, count) {
    const id = lock[kId];
    if (count > 0 || (count === undefined ? lock[kRouted]() : lock[kAcquiring] > 0)) {
      if (this.#locks.has(id)) return;
      this.#locks.set(id, lock);
      if (this.#locks.size >= this.#sweepAt) this.#sweep();
    } else {
      this.#locks.delete(id);
    }
  }

  // Lock objects on one holder (the same holderId) share its hold: a release
  // through one ends the others' too, without telling them. Amortized O(1) per add.
  #sweep() {
    for (const [id, lock] of this.#locks) {
      if (!lock[kRouted]()) this.#locks.delete(id);
    }
    this.#sweepAt = Math.max(64, 2 * this.#locks.size);
  }

  clear() {
    this.#locks.clear();
    this.#sweepAt = 64;
  }
}

/**
 * One hold of a lock handle (re-entries share it): its sequence number and its
 * AbortController, made when someone first asks for the signal (an AbortController
 * per acquire was a good part of an uncontended acquire's cost).
 */
class HoldState {
  constructor(seq) {
    this.seq = seq;
    this.error = null; // the LockLostError, once lost
    this.controller = null;
  }

  get signal() {
    if (this.controller === null) {
      this.controller = new AbortController();
      if (this.error !== null) this.controller.abort(this.error);
    }
    return this.controller.signal;
  }

  /** True if someone listens to the signal (asked before aborting it, which may remove listeners). */
  get heard() {
    const c = this.controller;
    return c !== null && (c.signal.onabort !== null || getEventListeners(c.signal, 'abort').length > 0);
  }

  abort(err) {
    this.error = err;
    this.controller?.abort(err);
  }
}

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
    return this.#state.signal;
  }

  /** True once this hold was lost. */
  get lost() {
    return this.#state.error !== null;
  }

  /** True once `release()` (or dispose) ran for this hold. */
  get released() {
    return this.#released;
  }

  /** `lock.extend(ms, options)` for the hold this acquisition belongs to; NotOwnerError once released. */
  async extend(ms, options) {
    if (this.#released) throw new NotOwnerError(`this hold of lock "${this.#lock.name}" was released; there is nothing to extend`);
    return this.#lock.extend(ms, options);
  }

  /** Releases this acquisition (one level). A second call does nothing. */
  release() {
    if (this.#released) return Promise.resolve();
    this.#released = true;
    return this.#lock.release(); // not awaited in an async wrapper: a promise and its ticks less per release
  }

  async [asyncDispose]() {
    await this.release();
  }

  [inspect.custom](depth, options, inspectValue) {
    const state = {
      lock: this.#lock.name,
      token: this.token,
      holdCount: this.holdCount,
      lost: this.lost,
      released: this.#released,
    };
    if (depth < 0) return options.stylize(`[Hold ${state.lock}]`, 'special');
    return `Hold ${inspectValue(state, options)}`;
  }
}

const QUORUMS = ['majority', 'all'];
const NO_MEMBERS = Object.freeze([]);
// A collected Lock's native handle goes with it (a lock that holds is never collected:
// its client keeps it).
const handles = new FinalizationRegistry((id) => native.lockDrop(id));

// An EventEmitter whose constructor does not run (see the prototypes set after the
// class): EventEmitter's methods make `_events` on the first listener, so a lock
// nobody listens to carries no listener table (issue 30: memory per lock object).
class Lock {
  #id; // its native handle's id (src/lock.rs), which every native call takes and its losses are told under
  #held; // the client's HeldLocks (a multi-lock: { update } over each of its members' clients')
  #members; // a multi-lock's member Lock objects (frozen); empty for a single lock
  #state = null; // the HoldState of the current (or latest, or next) hold, made when first needed
  #early = null; // { seq, message, reason }: a loss told before the acquire that made that hold returned
  #label = null; // what core has as this holder's label (only changes cross to the addon)
  #acquiring = 0; // acquires in flight: while any is, the client routes this lock's losses

  /** Made by `client.lock()`, `client.fencedLock()`, `client.fairLock()`, `client.readWriteLock()` (single) or `Lock.multi()`. */
  constructor(id, held, { members = [], label } = {}) {
    if (typeof id !== 'number' || !held) {
      throw new InvalidArgumentError('use client.lock(name) or Lock.multi(locks, { quorum }) to make a lock');
    }
    this.#id = id;
    handles.register(this, id);
    this.#held = held;
    this.#members = members.length === 0 ? NO_MEMBERS : Object.freeze([...members]); // one array for every single lock
    if (label !== undefined) this.#relabel(label);
  }

  /** Tells core a new label (a string, or null for none); the same label again costs nothing. */
  #relabel(label) {
    if (label === this.#label) return;
    if (label !== null && typeof label !== 'string') {
      throw new ArgumentTypeError(`label must be a string or null, not ${typeOf(label)}`);
    }
    callSync(() => native.lockSetHolderLabel(this.#id, label));
    this.#label = label;
  }

  /**
   * What names this holder in its notes (the thread, task or job: `label` of
   * `client.lock()` or of the latest acquire that gave one); null when none.
   */
  get label() {
    return this.#label;
  }

  /**
   * Who held the lock when this handle's latest acquire with a wait (`waitMs` > 0)
   * timed out, as read at that moment: `{ owner, count, info, app, host, pid, thread,
   * command, renewed, since, heldForMs, description }`; null if none timed out, or the
   * lock was free by then. (A plain try keeps nothing: a loop of tries would pay a read each.)
   */
  lastHolder() {
    const h = callSync(() => native.lockLastHolder(this.#id));
    return h === null || h === undefined ? null : holder(h);
  }

  /**
   * One lock over `locks` (single lock handles, usually one name on several clients,
   * one client per independent Redis server): held while `quorum` of them are held.
   * `quorum`: 'majority' (Redlock, N/2+1) or 'all' (MultiLock). The result is a new
   * holder with the API of a single lock (no fencing token; status queries such as
   * isLocked() reject with InvalidArgumentError: ask its `members`). It takes the
   * members over: do not acquire or release them directly while it is in use.
   */
  static multi(locks, options) {
    const o = optionsObject(options, MULTI);
    if (!QUORUMS.includes(o.quorum)) {
      const Err = o.quorum === undefined || typeof o.quorum === 'string' ? InvalidArgumentError : ArgumentTypeError;
      throw new Err(
        `Lock.multi needs { quorum: 'majority' } (Redlock) or { quorum: 'all' } (MultiLock), not ${describe(o.quorum)}`,
      );
    }
    if (typeof locks === 'string' || !locks || typeof locks[Symbol.iterator] !== 'function') {
      throw new ArgumentTypeError(`a multi-lock's members must be an array of Lock objects, not ${describe(locks)}`);
    }
    const members = [...locks];
    if (members.length === 0) throw new InvalidArgumentError('a multi-lock needs at least one member lock');
    members.forEach((member, i) => {
      if (!(member instanceof Lock)) {
        throw new ArgumentTypeError(`member ${i + 1} of a multi-lock is not a Lock (from client.lock(name)) but ${describe(member)}`);
      }
      if (member.#members.length > 0) {
        throw new InvalidArgumentError(`member ${i + 1} of a multi-lock is itself a multi-lock: members must be single locks`);
      }
      const first = members.indexOf(member);
      if (first !== i) {
        throw new InvalidArgumentError(`member ${i + 1} of a multi-lock is the same Lock object as member ${first + 1}`);
      }
    });
    // Core refuses one name twice on one client (and a multi-lock member) too.
    const id = callSync(() => native.multiLock(members.map((m) => m.#id), o.quorum));
    // Its losses are told by the first open client among its members': each routes it.
    const homes = [...new Set(members.map((m) => m.#held))];
    const held = { update: (lock, count) => homes.forEach((home) => home.update(lock, count)) };
    return new Lock(id, held, { members });
  }

  get [kId]() {
    return this.#id;
  }

  get [kAcquiring]() {
    return this.#acquiring;
  }

  /**
   * True while the client must route this lock's losses: it holds, an acquire is in
   * flight, or its latest hold was lost and that is still to be told here.
   */
  [kRouted]() {
    if (this.#acquiring > 0 || native.lockLocalHoldCount(this.#id) > 0) return true;
    return native.lockLost(this.#id) && (this.#state === null || this.#state.error === null);
  }

  /** The member Lock objects of a multi-lock, in order; empty for a single lock. */
  get members() {
    return this.#members;
  }

  /** A multi-lock's quorum, 'majority' or 'all'; null for a single lock. */
  get quorum() {
    return native.lockQuorum(this.#id) ?? null;
  }

  /** How messages name this lock. */
  #what() {
    if (this.#members.length === 0) return `lock "${this.name}"`;
    const names = [...new Set(this.#members.map((m) => m.name))].join('", "');
    const kind = this.quorum === 'all' ? 'multi-lock' : 'redlock';
    return `${kind} "${names}" (${this.#members.length} members)`;
  }

  /** The lock name. */
  get name() {
    return native.lockName(this.#id);
  }

  /** The owner field this holder writes: `<client-id>:<holder-id>`. */
  get owner() {
    return native.lockOwner(this.#id);
  }

  /** Which lock: 'reentrant', 'fenced', 'fair', 'read' or 'write'. */
  get kind() {
    return native.lockKind(this.#id);
  }

  /** True for fenced locks. */
  get fenced() {
    return native.lockFenced(this.#id);
  }

  /** Fencing token of the current hold (fenced locks), else null (always for a multi-lock). */
  get token() {
    return native.lockToken(this.#id) ?? null;
  }

  /** True if the latest hold of this handle was lost (until it acquires again). */
  get lost() {
    return native.lockLost(this.#id);
  }

  /** Aborted when the current hold is lost. Before the first acquire: the next hold's signal. */
  get signal() {
    return this.#next().signal;
  }

  /** The HoldState of the current hold, or of the next one before this handle's first. */
  #next() {
    if (this.#state === null) this.#state = new HoldState(null);
    return this.#state;
  }

  #hold(info) {
    if (this.#state === null || info.seq !== this.#state.seq) {
      // A new hold: its own signal (the unused one of "the next hold", or a fresh one).
      if (this.#state === null || this.#state.seq !== null) this.#state = new HoldState(info.seq);
      else this.#state.seq = info.seq;
    }
    const hold = new Hold(this, info, this.#state);
    if (this.#early !== null && this.#early.seq === info.seq) {
      // Lost right after it was taken: the notification overtook the acquire's reply.
      const { message, reason } = this.#early;
      this.#early = null;
      this.#lost(message, reason);
    }
    return hold;
  }

  [lostEvent](seq, message, reason) {
    if (seq === this.#state?.seq) this.#lost(message, reason);
    else if (native.lockLocalHoldCount(this.#id) === 0) this.#early = { seq, message, reason }; // maybe a hold whose acquire is still to return
    this.#held.update(this);
  }

  #lost(message, reason) {
    const err = new LockLostError(message);
    err.reason = reason;
    // Format the stack now: until then V8 keeps the frames' receivers (this lock),
    // and a kept error (a signal's reason) would keep a lost lock object alive.
    void err.stack;
    const state = this.#state;
    if (state.error !== null) return;
    // Whether anyone will hear of it, asked before the abort runs (and maybe removes)
    // the signal's listeners.
    const heard = this.listenerCount('lost') > 0 || state.heard;
    state.abort(err);
    this.emit('lost', err);
    if (!heard) {
      // A loss nobody hears of would go unnoticed while the critical section goes on.
      process.emitWarning(
        `${err.message}. Nobody listened for it: handle lock.on('lost', ...) or the hold's signal`,
        { type: 'FerrolockWarning', code: 'FERROLOCK_LOCK_LOST' },
      );
    }
  }

  /**
   * One acquire: the hold, or null when not acquired within `waitMs`, or with `orThrow`
   * a NotAcquiredError. (One async function per call: each layer costs a promise and
   * its ticks, a good part of an uncontended acquire's JS work.)
   */
  async #acquire(waitMs, leaseMs, signal, orThrow, take = native.lockAcquire) {
    if (signal && signal.aborted) throw abortError(signal);
    const cancelId = signal ? watchSignal(signal) : undefined;
    let count; // known once acquired
    this.#acquiring++;
    this.#held.update(this, 1); // routed from now: a loss may overtake the reply
    try {
      const info = await take(this.#id, waitMs, leaseMs, cancelId);
      if (info === null || info === undefined) {
        if (orThrow) throw this.#notAcquired(waitMs);
        return null;
      }
      // Without a token the addon answers one number, seq * 2^21 + count (src/lock.rs).
      const hold = typeof info === 'number' ? { seq: Math.floor(info / COUNT_SPAN), count: info % COUNT_SPAN, token: null } : info;
      count = hold.count;
      return this.#hold(hold);
    } catch (e) {
      const err = convert(e);
      if (err.code === 'ERR_CANCELLED' && signal && signal.aborted) throw abortError(signal);
      throw err;
    } finally {
      if (signal) unwatchSignal(signal, cancelId);
      this.#acquiring--;
      this.#held.update(this, count);
    }
  }

  /**
   * An acquire through `take(id, waitMs, leaseMs, cancelId)` instead of the lock's own
   * (an election's campaign, lib/election.js), with this lock's hold bookkeeping:
   * the hold, or null when not taken within `waitMs`.
   */
  [kTake](take, waitMs, signal) {
    return this.#acquire(waitMs, undefined, signal, false, take);
  }

  /** The NotAcquiredError of a timed-out acquire, naming (and carrying as `holder`) who held the lock. */
  #notAcquired(waitMs) {
    const seen = waitMs > 0 ? this.lastHolder() : null;
    const by = seen === null ? 'someone else' : seen.description;
    const err = new NotAcquiredError(`${this.#what()} was not acquired within ${waitMs} ms; it is held by ${by}`);
    err.holder = seen;
    return err;
  }

  /**
   * Waits until acquired (watchdog lease unless `leaseMs`). `signal` aborts the wait
   * (rejects with AbortError, code ERR_CANCELLED). With `waitMs`, rejects with
   * NotAcquiredError when that runs out.
   */
  acquire(options) {
    return this.#acquireOrThrow(options, ACQUIRE);
  }

  /** `acquire` with the options `spec` allows (acquire's or using's). */
  #acquireOrThrow(options, spec) {
    let waitMs, leaseMs, signal;
    try {
      const o = optionsObject(options, spec);
      waitMs = ms(o.waitMs, 'waitMs');
      leaseMs = ms(o.leaseMs, 'leaseMs');
      signal = checkSignal(o.signal);
      if (o.label !== undefined) this.#relabel(o.label);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.#acquire(waitMs, leaseMs, signal, true);
  }

  /** One attempt, or waits up to `waitMs` (default 0). Resolves true when acquired. */
  async tryAcquire(options) {
    const o = optionsObject(options, TRY_ACQUIRE);
    const waitMs = ms(o.waitMs, 'waitMs') ?? 0;
    if (o.label !== undefined) this.#relabel(o.label);
    return (await this.#acquire(waitMs, ms(o.leaseMs, 'leaseMs'), checkSignal(o.signal))) !== null;
  }

  /** Releases one level. Rejects with ERR_NOT_OWNER if this handle does not hold it. */
  async release() {
    let left; // levels this holder still holds, once released
    try {
      left = await native.lockRelease(this.#id);
    } catch (e) {
      throw convert(e);
    } finally {
      this.#held.update(this, left);
    }
  }

  /** Releases every level of this handle's hold. */
  async releaseAll() {
    try {
      await call(() => native.lockReleaseAll(this.#id));
    } finally {
      this.#held.update(this);
    }
  }

  /** True if anyone holds the lock. */
  isLocked() {
    return call(() => native.lockIsLocked(this.#id));
  }

  /** True if this handle holds the lock (as the server sees it). */
  isHeld() {
    return call(() => native.lockIsHeld(this.#id));
  }

  /** This handle's hold count (as the server sees it). */
  holdCount() {
    return call(() => native.lockHoldCount(this.#id));
  }

  /** Ms left on the lock's lease (whoever holds it); null when not locked. */
  remainingLeaseMs() {
    return call(() => native.lockRemainingLeaseMs(this.#id));
  }

  /**
   * Adds `ms` to the lease of this holder's hold (one taken with `leaseMs`); with
   * `{ replace: true }` the lease becomes `ms` instead. Resolves with the lease now
   * left (ms). NotOwnerError if this handle holds nothing, LockLostError if its hold
   * was lost, InvalidArgumentError for a hold the watchdog renews (no `leaseMs`).
   */
  async extend(ms, options) {
    const o = optionsObject(options, EXTEND);
    const by = checkDuration(ms, 'extend');
    return call(() => (bool(o.replace, 'replace') ? native.lockSetLease(this.#id, by) : native.lockExtend(this.#id, by)));
  }

  /** Resets the lease of this holder's hold to the `leaseMs` it was taken with; resolves with it (ms). */
  reacquire() {
    return call(() => native.lockReacquire(this.#id));
  }

  /**
   * Attaches `info` (text, at most 1024 bytes; `null` removes it) to this holder's
   * entry in `status()`, for operators. NotOwnerError if this handle does not hold.
   * It lives as long as the lease it was set under: set it again after a renewal.
   */
  async setHolderInfo(info) {
    if (info !== null && typeof info !== 'string') {
      throw new ArgumentTypeError(`holder info must be a string or null, not ${typeOf(info)}`);
    }
    return call(() => native.lockSetHolderInfo(this.#id, info));
  }

  /**
   * The lock as the server sees it: `{ name, holders, remainingLeaseMs, subscribers,
   * lastToken, evictionPolicy }` (`null` for what is not there; `evictionPolicy`: the
   * server's maxmemory-policy when it may evict lock keys), each holder with its note as
   * lastHolder() gives it.
   */
  async status() {
    const s = await call(() => native.lockStatus(this.#id));
    return {
      name: s.name,
      holders: s.holders.map(holder),
      remainingLeaseMs: s.remainingLeaseMs ?? null,
      subscribers: s.subscribers,
      lastToken: s.lastToken ?? null,
      evictionPolicy: s.evictionPolicy ?? null,
    };
  }

  /** Deletes the lock whoever holds it and wakes a waiter. True if it was locked. */
  forceUnlock() {
    return call(() => native.lockForceUnlock(this.#id));
  }

  /**
   * Acquires, runs `fn(signal, hold)`, and always releases. `signal` aborts if the hold
   * is lost meanwhile. With `waitMs`, rejects with NotAcquiredError when that runs out.
   */
  async using(fn, options) {
    if (typeof fn !== 'function') throw new ArgumentTypeError(`using() needs a function, not ${typeOf(fn)}`);
    const minHoldMs = ms(optionsObject(options, USING).minHoldMs, 'minHoldMs');
    const hold = await this.#acquireOrThrow(options, USING);
    const end = () => (minHoldMs === undefined ? hold.release() : this.#releaseMinHold(hold, minHoldMs));
    let result;
    try {
      result = await fn(hold.signal, hold);
    } catch (e) {
      try {
        await end();
      } catch {
        // The error of fn is the one to report.
      }
      throw e;
    }
    await end();
    return result;
  }

  /** `using`'s `minHoldMs`: the hold ends no sooner than that long after it was taken. */
  async #releaseMinHold(hold, minHoldMs) {
    if (hold.released) return;
    try {
      await call(() => native.lockReleaseMinHold(this.#id, minHoldMs));
    } finally {
      this.#held.update(this);
    }
  }

  // The state this process knows without a round-trip; status() asks the server.
  [inspect.custom](depth, options, inspectValue) {
    const count = native.lockLocalHoldCount(this.#id);
    const state = { name: this.name, kind: this.kind };
    if (this.#members.length > 0) {
      state.quorum = this.quorum;
      state.members = this.#members.length;
    }
    Object.assign(state, { held: count > 0, count, lost: this.lost, token: this.token });
    if (depth < 0) return options.stylize(`[Lock ${state.name}]`, 'special');
    return `Lock ${inspectValue(state, options)}`;
  }
}

/** A required number of ms (ranges are core's). */
function checkDuration(value, what) {
  if (value === undefined || value === null) throw new ArgumentTypeError(`${what}() needs a number of milliseconds`);
  return ms(value, `${what}() ms`);
}

/** A value as error messages show it. */
function describe(value) {
  if (value === null) return 'null';
  if (typeof value === 'string') return `"${value}"`;
  if (typeof value !== 'object') return String(value);
  return value.constructor?.name ? `a ${value.constructor.name}` : 'an object';
}

Object.setPrototypeOf(Lock.prototype, EventEmitter.prototype);
Object.setPrototypeOf(Lock, EventEmitter);

module.exports = { Lock, Hold, HeldLocks, lostEvent, kTake };
