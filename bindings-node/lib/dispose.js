'use strict';
// Node 20.0-20.3 have no Symbol.asyncDispose (20.4 added it); TypeScript's `await using`
// down-level looks it up on Symbol. Define it (under the registered key other polyfills
// use) when missing.

if (typeof Symbol.asyncDispose !== 'symbol') {
  Object.defineProperty(Symbol, 'asyncDispose', {
    value: Symbol.for('Symbol.asyncDispose'),
    writable: false,
    enumerable: false,
    configurable: false,
  });
}

module.exports = { asyncDispose: Symbol.asyncDispose };
