'use strict';
// Argument checks: types here, ranges in Rust (ferrolock::validate).

const { InvalidArgumentError } = require('./errors');

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

function bool(value, what) {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw new InvalidArgumentError(`${what} must be true or false, not ${typeof value}`);
  return value;
}

/** A string option. The message names the type only: the value may be a password. */
function string(value, what) {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new InvalidArgumentError(`${what} must be a string, not ${typeof value}`);
  return value;
}

function checkSignal(signal) {
  if (signal === undefined || signal === null) return undefined;
  if (typeof signal !== 'object' || typeof signal.aborted !== 'boolean' || typeof signal.addEventListener !== 'function') {
    throw new InvalidArgumentError('signal must be an AbortSignal');
  }
  return signal;
}

module.exports = { optionsObject, ms, fraction, bool, string, checkSignal };
