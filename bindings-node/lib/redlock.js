'use strict';
// Multi-locks over several independent Redis servers: redlock() / multiLock()
// over lock handles you made, and Redlock, which connects one client per server
// and makes such locks by name. The algorithm is core's (Lock.multi).

const { inspect } = require('node:util');
const { asyncDispose } = require('./dispose');
const { InvalidArgumentError, ArgumentTypeError } = require('./errors');
const { optionKeys, optionsObject, typeOf } = require('./options');
const { Client, CONNECT_KEYS } = require('./client');
const { Lock } = require('./lock');

/** A Redlock (majority quorum, N/2+1) over `locks`: see Lock.multi. */
function redlock(locks) {
  return Lock.multi(locks, { quorum: 'majority' });
}

/** A MultiLock (every member needed) over `locks`: see Lock.multi. */
function multiLock(locks) {
  return Lock.multi(locks, { quorum: 'all' });
}

const kCreate = Symbol('Redlock.create');
const CONNECT = optionKeys('Redlock.connect', ['quorum', ...CONNECT_KEYS]);

/**
 * One client per Redis server (independent masters), making multi-locks by name:
 * `redlock.lock(name)` is a multi-lock over `name` on every server. `close()` closes
 * the clients.
 */
class Redlock {
  #clients;
  #quorum;

  constructor(key, clients, quorum) {
    if (key !== kCreate) throw new InvalidArgumentError('use `await Redlock.connect(urls, options)` to make a Redlock');
    this.#clients = Object.freeze(clients);
    this.#quorum = quorum;
  }

  /**
   * Connects one client per URL (each an independent Redis master; every one must be
   * reachable now). Options: `quorum` ('majority', the default: Redlock; or 'all':
   * MultiLock), and any `Client.connect` option, given to every client.
   */
  static async connect(urls, options) {
    if (typeof urls === 'string' || !urls || typeof urls[Symbol.iterator] !== 'function') {
      throw new ArgumentTypeError(`Redlock.connect needs an array of Redis URLs, one per independent server, not ${typeOf(urls)}`);
    }
    const list = [...urls];
    if (list.length === 0) throw new InvalidArgumentError('Redlock.connect needs at least one Redis URL');
    list.forEach((url, i) => {
      if (typeof url !== 'string') throw new ArgumentTypeError(`Redis URL ${i + 1} must be a string, not ${typeOf(url)}`);
      // The message never repeats a URL: it may hold a password.
      if (list.indexOf(url) !== i) {
        throw new InvalidArgumentError(`Redis URL ${i + 1} is the same as URL ${list.indexOf(url) + 1}: each member must be another server`);
      }
    });
    const { quorum = 'majority', ...connectOptions } = optionsObject(options, CONNECT);
    if (quorum !== 'majority' && quorum !== 'all') {
      const Err = typeof quorum === 'string' ? InvalidArgumentError : ArgumentTypeError;
      throw new Err(`quorum must be 'majority' (Redlock) or 'all' (MultiLock), not ${typeof quorum === 'string' ? `"${quorum}"` : typeof quorum}`);
    }
    const settled = await Promise.allSettled(list.map((url) => Client.connect(url, connectOptions)));
    const failed = settled.find((r) => r.status === 'rejected');
    if (failed) {
      await Promise.allSettled(settled.filter((r) => r.status === 'fulfilled').map((r) => r.value.close()));
      throw failed.reason;
    }
    return new Redlock(kCreate, settled.map((r) => r.value), quorum);
  }

  /** The clients, one per URL, in order. */
  get clients() {
    return this.#clients;
  }

  /** 'majority' (Redlock) or 'all' (MultiLock). */
  get quorum() {
    return this.#quorum;
  }

  /** True once every client is closed. */
  get closed() {
    return this.#clients.every((c) => c.closed);
  }

  /** A multi-lock over `name` on every server (a new holder). */
  lock(name, options) {
    return Lock.multi(this.#clients.map((c) => c.lock(name, options)), { quorum: this.#quorum });
  }

  /** Closes every client (releasing what they hold); rejects with the first failure, after trying all. */
  async close() {
    const results = await Promise.allSettled(this.#clients.map((c) => c.close()));
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  async [asyncDispose]() {
    await this.close();
  }

  [inspect.custom](depth, options, inspectValue) {
    const state = { quorum: this.#quorum, clients: this.#clients.length, closed: this.closed };
    if (depth < 0) return options.stylize('[Redlock]', 'special');
    return `Redlock ${inspectValue(state, options)}`;
  }
}

module.exports = { Redlock, redlock, multiLock };
