'use strict';
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

module.exports = { asyncDispose: Symbol.asyncDispose };
