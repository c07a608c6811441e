'use strict';
// The native addon (ferrolock.node, built from src/ on install). Its declarations
// are in native.d.ts, generated from the Rust sources.

const path = require('node:path');

try {
  module.exports = require(path.join(__dirname, '..', 'ferrolock.node'));
} catch (e) {
  throw new Error(
    `ferrolock: cannot load the native addon (${e.message}); ` +
      'build it with `npm run build` in the ferrolock package (needs a Rust toolchain)',
    { cause: e },
  );
}
