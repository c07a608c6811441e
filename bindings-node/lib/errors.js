'use strict';
// Errors (DESIGN §4): FerrolockError and one subclass per code. The native addon
// throws (and rejects with) plain errors whose `code` napi set to the core's code;
// `convert` turns them into the matching subclass.

class FerrolockError extends Error {
  constructor(message, code, options) {
    super(message, options);
    this.name = 'FerrolockError';
    this.code = code;
  }

  // An ArgumentTypeError is a TypeError (Node's convention for a value of the wrong
  // type and an unknown option), yet code that catches ferrolock's errors by class
  // (`instanceof InvalidArgumentError` / `FerrolockError`) must still catch it.
  // Subclasses inherit this; for them it is the plain prototype check.
  static [Symbol.hasInstance](value) {
    if (Function.prototype[Symbol.hasInstance].call(this, value)) return true;
    return (this === FerrolockError || this === errors.InvalidArgumentError) && value instanceof ArgumentTypeError;
  }
}

/**
 * A value of the wrong type, an options object that is not one, or an unknown option
 * key: a TypeError whose `code` is 'ERR_INVALID_ARGUMENT', also `instanceof
 * InvalidArgumentError` and `instanceof FerrolockError`.
 */
class ArgumentTypeError extends TypeError {
  constructor(message, options) {
    super(message, options);
    this.code = 'ERR_INVALID_ARGUMENT';
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

// The public error classes by export name: FerrolockError, then one per code. A
// third field is the errors' `name` when it is not the class name, and an alias:
// CancelledError, whose errors are named AbortError, is exported as AbortError too.
const errors = { FerrolockError, ArgumentTypeError };
for (const [className, code, name] of [
  ['NotAcquiredError', 'ERR_NOT_ACQUIRED'],
  ['NotOwnerError', 'ERR_NOT_OWNER'],
  ['LockLostError', 'ERR_LOCK_LOST'],
  ['ConnectionError', 'ERR_CONNECTION'],
  ['WrongTypeError', 'ERR_WRONG_TYPE'],
  ['InvalidArgumentError', 'ERR_INVALID_ARGUMENT'],
  ['PermissionDeniedError', 'ERR_PERMISSION'],
  ['NotReplicatedError', 'ERR_NOT_REPLICATED'],
  ['CancelledError', 'ERR_CANCELLED', 'AbortError'],
  ['ClientClosedError', 'ERR_CLIENT_CLOSED'],
  ['InternalError', 'ERR_INTERNAL'],
]) {
  errors[className] = defineError(className, code, name);
  if (name) errors[name] = errors[className];
}
const { InternalError } = errors;

/** Error class by native code (the core says NOT_ACQUIRED where JS says ERR_NOT_ACQUIRED). */
const byCode = new Map(Object.values(errors).filter((cls) => cls.code).map((cls) => [cls.code, cls]));
byCode.set('NOT_ACQUIRED', errors.NotAcquiredError);

/** A native error (its `code` set by the addon) as the matching FerrolockError. */
function convert(e) {
  if (e instanceof FerrolockError) return e;
  const cls = e ? byCode.get(e.code) : undefined;
  if (cls) return new cls(e.message);
  return new InternalError(`ferrolock: unexpected error from the native addon: ${e && e.message}`, { cause: e });
}

/** Awaits `promiseFn()`, converting what it throws. */
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

module.exports = { errors, ...errors, convert, call, callSync };
