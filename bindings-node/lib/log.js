'use strict';
// Core's log events (tracing) for JS: FERROLOCK_LOG=<filter> writes them to stderr
// (set up when the addon loads), setLogger(fn) hands them to a function.

const native = require('./native');
const { ArgumentTypeError, callSync } = require('./errors');
const { optionKeys, optionsObject, typeOf, string } = require('./options');

const SET_LOGGER = optionKeys('setLogger', ['level']);

/**
 * Calls `logger(record)` for each of core's log events at `level` or above (a
 * level or `target=level` directives: 'info' by default, 'warn', 'ferrolock=debug', ...); `null` stops it.
 * Process-wide: a later call replaces the logger. Events are queued to the event
 * loop, never waited for; the logger does not keep the process alive.
 */
function setLogger(logger, options) {
  if (logger !== null && typeof logger !== 'function') {
    throw new ArgumentTypeError(`setLogger needs a function (or null to stop logging), not ${typeOf(logger)}`);
  }
  const o = optionsObject(options, SET_LOGGER);
  const level = string(o.level, 'level');
  if (logger === null) {
    callSync(() => native.setLogger(null, undefined));
    return;
  }
  // A throwing logger must not fail inside the addon's callback: rethrown as an
  // uncaught exception, as an EventEmitter listener's would be.
  const forward = (record) => {
    try {
      logger(record);
    } catch (e) {
      process.nextTick(() => {
        throw e;
      });
    }
  };
  callSync(() => native.setLogger(forward, level));
}

module.exports = { setLogger };
