'use strict';
// Argument checks: types and option keys here, ranges in Rust (ferrolock::validate).
// They run on every acquire, so they stay cheap: one `for...in` over the few keys
// given, a Set lookup each; the messages are only built when something is wrong.

const { InvalidArgumentError, ArgumentTypeError } = require('./errors');

const EMPTY = Object.freeze({});

/** The valid keys of one options object, and how messages name that object. */
function optionKeys(what, keys) {
  return { what, keys: new Set(keys), sorted: [...keys].sort() };
}

/**
 * `options` as an object whose every key is one of `spec`'s (`undefined`/`null`: none
 * given). A misspelt key (`waitMS`, `timeout`) would otherwise be silently ignored.
 */
function optionsObject(options, spec) {
  if (options === undefined || options === null) return EMPTY;
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new ArgumentTypeError(`${spec.what} options must be an object, not ${typeOf(options)}`);
  }
  for (const key in options) {
    if (!spec.keys.has(key)) throw unknownOption(spec, key);
  }
  return options;
}

function unknownOption(spec, key) {
  const lower = key.toLowerCase();
  const near = spec.sorted.find((k) => k.toLowerCase() === lower) ?? HINTS[lower]?.find((k) => spec.keys.has(k));
  const hint = near ? ` (did you mean ${near}?)` : '';
  return new ArgumentTypeError(
    `${spec.what} options: unknown option "${key}"${hint}; valid options: ${spec.sorted.join(', ')}`,
  );
}

// Names other lock libraries use for ferrolock's options.
const HINTS = {
  timeout: ['waitMs'],
  wait: ['waitMs'],
  waittime: ['waitMs'],
  lease: ['leaseMs'],
  leasetime: ['leaseMs'],
  ttl: ['leaseMs'],
  duration: ['leaseMs'],
  count: ['permits'],
  n: ['permits'],
  watchdog: ['watchdogTimeoutMs'],
  watchdogtimeout: ['watchdogTimeoutMs'],
};

function typeOf(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value;
}

function ms(value, what) {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number') {
    throw new ArgumentTypeError(`${what} must be a number of milliseconds, not ${typeOf(value)}`);
  }
  if (Number.isNaN(value)) throw new InvalidArgumentError(`${what} must be a number of milliseconds, not NaN`);
  return value;
}

/** A whole number (permits, a count); its range is core's, checked in Rust. */
function count(value, what) {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number') throw new ArgumentTypeError(`${what} must be a number, not ${typeOf(value)}`);
  return value;
}

function fraction(value, what) {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number') throw new ArgumentTypeError(`${what} must be a number, not ${typeOf(value)}`);
  return value;
}

function bool(value, what) {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw new ArgumentTypeError(`${what} must be true or false, not ${typeOf(value)}`);
  return value;
}

/** A string option. The message names the type only: the value may be a password. */
function string(value, what) {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new ArgumentTypeError(`${what} must be a string, not ${typeOf(value)}`);
  return value;
}

function checkSignal(signal) {
  if (signal === undefined || signal === null) return undefined;
  if (typeof signal !== 'object' || typeof signal.aborted !== 'boolean' || typeof signal.addEventListener !== 'function') {
    throw new ArgumentTypeError(`signal must be an AbortSignal, not ${typeOf(signal)}`);
  }
  return signal;
}

module.exports = { optionKeys, optionsObject, typeOf, ms, count, fraction, bool, string, checkSignal };
