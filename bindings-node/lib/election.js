'use strict';
// Leader election: a candidate (`Election`) leads through the Lock object of its
// fenced lock (lib/lock.js: its holds are the leaderships, their 'lost' events and
// AbortSignals the leaderships'), campaigning through the addon's election (which
// announces each new leader); `Observer` tells every change of leader.

const { EventEmitter } = require('node:events');
const { inspect } = require('node:util');
const { asyncDispose } = require('./dispose');
const { InvalidArgumentError, LockLostError, NotOwnerError, call } = require('./errors');
const { optionKeys, optionsObject, ms, checkSignal } = require('./options');
const { abortable } = require('./abort');
const { holder } = require('./holder');
const { kTake } = require('./lock');

const CAMPAIGN = optionKeys('campaign', ['waitMs', 'signal']);
const NEXT = optionKeys('observer.next', ['timeoutMs', 'signal']);

/** `{ term, holder, leaseLeftMs }` from the addon's LeaderInfo (null for nobody). */
function leader(info) {
  if (info === null || info === undefined) return null;
  return Object.freeze({ term: info.term, holder: holder(info.holder), leaseLeftMs: info.leaseLeftMs ?? null });
}

/** One leadership of a candidate: its term, and a signal aborted if it is lost. */
class Leadership {
  #election;
  #hold;

  constructor(election, hold) {
    this.#election = election;
    this.#hold = hold;
    /** The term: this leadership's fencing token (a bigint), larger than every earlier leader's. */
    this.term = hold.token;
    Object.freeze(this);
  }

  /** Aborted (with a LockLostError as reason) when this leadership is lost; never by a resignation. */
  get signal() {
    return this.#hold.signal;
  }

  /** True once this leadership was lost (told before another candidate can lead). */
  get lost() {
    return this.#hold.lost;
  }

  /** Resigns: true, or false if it was lost (or resigned) meanwhile. */
  async resign() {
    if (this.#hold.released || this.#hold.lost) return false;
    return this.#election.resign();
  }

  async [asyncDispose]() {
    await this.resign();
  }

  [inspect.custom](depth, options, inspectValue) {
    const state = { election: this.#election.name, term: this.term, lost: this.lost };
    return `Leadership ${inspectValue(state, options)}`;
  }
}

/**
 * A candidate in a leader election, from `client.election(name)`: campaigns, leads
 * with a term (the fencing token of the election's lock), resigns. Emits 'lost'
 * (a LockLostError) when a leadership of it is lost. Built on the fenced lock of
 * `name`: a Redisson RLock of that name excludes the candidates and is excluded by
 * a leader.
 */
class Election extends EventEmitter {
  #native;
  #lock;

  /** Made by `client.election(name)`. */
  constructor(nativeElection, lock) {
    super();
    if (!nativeElection || !lock) throw new InvalidArgumentError('use client.election(name) to make a candidate');
    this.#native = nativeElection;
    this.#lock = lock;
    // Forwarded once someone listens here: until then the lock's own check warns of a
    // loss nobody hears (a leadership's signal counts as heard).
    let forwarding = false;
    this.on('newListener', (event) => {
      if (event !== 'lost' || forwarding) return;
      forwarding = true;
      lock.on('lost', (err) => this.emit('lost', err));
    });
  }

  /** The election's name (its lock's). */
  get name() {
    return this.#native.name;
  }

  /** The owner field this candidate writes while it leads. */
  get owner() {
    return this.#lock.owner;
  }

  /** The fenced lock this candidate holds while it leads (for its status). */
  get lock() {
    return this.#lock;
  }

  /** True while this candidate leads (until it resigns or learns of a loss). */
  get leading() {
    return this.#lock.token !== null && !this.#lock.lost;
  }

  /** The term of this candidate's leadership while it leads (a bigint), else null. */
  get term() {
    return this.leading ? this.#lock.token : null;
  }

  /**
   * Waits (on pub/sub) until this candidate leads: its Leadership, or null when
   * `waitMs` ran out first. `signal` aborts the campaign (AbortError, ERR_CANCELLED;
   * nothing is held). InvalidArgumentError if it leads already.
   */
  async campaign(options) {
    const o = optionsObject(options, CAMPAIGN);
    const waitMs = ms(o.waitMs, 'waitMs');
    const signal = checkSignal(o.signal);
    const take = (_id, wait, _lease, cancelId) => this.#native.campaign(wait, cancelId);
    const hold = await this.#lock[kTake](take, waitMs, signal);
    return hold === null ? null : new Leadership(this, hold);
  }

  /** Ends this candidate's leadership: true if it led, false if it did not (any more). */
  async resign() {
    if (this.#lock.token === null && !this.#lock.lost) return false;
    try {
      await this.#lock.releaseAll();
      return true;
    } catch (e) {
      if (e instanceof LockLostError || e instanceof NotOwnerError) return false;
      throw e;
    }
  }

  /** Who leads now (one read): `{ term, holder, leaseLeftMs }`, or null. */
  async leader() {
    return leader(await call(() => this.#native.leader()));
  }

  /**
   * An Observer of this election, subscribed from now on: `for await (const leader
   * of await election.observe())` gets who leads now, then each change.
   */
  async observe() {
    return new Observer(await call(() => this.#native.observe()));
  }

  [inspect.custom](depth, options, inspectValue) {
    const state = { name: this.name, leading: this.leading, term: this.term };
    return `Election ${inspectValue(state, options)}`;
  }
}

/**
 * Leadership changes of one election, in order: who leads now, then each new
 * leader (`{ term, holder, leaseLeftMs }`) or null when nobody does. Woken by Redis
 * (announcements, releases) and by the leader's lease end, never by polling. A
 * pending `next()` keeps the process running, as any pending call does.
 */
class Observer {
  #native;

  constructor(nativeObserver) {
    this.#native = nativeObserver;
  }

  /**
   * The next change. With `timeoutMs`, resolves `undefined` when none came in time;
   * `signal` aborts the wait (AbortError). No change is lost either way.
   */
  async next(options) {
    const o = optionsObject(options, NEXT);
    const timeoutMs = ms(o.timeoutMs, 'timeoutMs');
    const signal = checkSignal(o.signal);
    const change = await abortable((cancelId) => this.#native.next(timeoutMs, cancelId), signal, 'the wait for a leadership change was aborted');
    return change.changed ? leader(change.leader) : undefined;
  }

  async *[Symbol.asyncIterator]() {
    for (;;) yield await this.next();
  }
}

module.exports = { Election, Leadership, Observer };
