'use strict';
// ferrolock for Node.js: a thin layer over the native addon (ferrolock.node; its
// declarations: native.d.ts). lib/errors.js turns native error codes into
// FerrolockError subclasses; lib/abort.js wires AbortSignal into native cancel
// handles; lib/lock.js turns lost-hold notifications into 'lost' events and
// aborted signals and keeps lock objects that hold reachable from their client;
// lib/client.js connects and makes lock handles; lib/family.js has the other
// shapes (semaphores, count-down latch) and the read-write lock's pair of locks;
// lib/election.js has leader election (a candidate leads through its lock's Lock);
// lib/redlock.js makes multi-locks over several servers (Redlock, MultiLock);
// lib/log.js hands core's log events to a JS function. The logic is in Rust.

const { Client } = require('./lib/client');
const { Lock, Hold } = require('./lib/lock');
const { Election, Leadership, Observer } = require('./lib/election');
const { Semaphore, Permits, PermitExpirableSemaphore, Permit, CountDownLatch, ReadWriteLock } = require('./lib/family');
const { Redlock, redlock, multiLock } = require('./lib/redlock');
const { setLogger } = require('./lib/log');
const { errors } = require('./lib/errors');
// One version for the package and its addon: the workspace's, checked equal by test/version.test.js.
const { version } = require('./package.json');

module.exports = {
  Client,
  Lock,
  Hold,
  Election,
  Leadership,
  Observer,
  ReadWriteLock,
  Semaphore,
  Permits,
  PermitExpirableSemaphore,
  Permit,
  CountDownLatch,
  Redlock,
  redlock,
  multiLock,
  setLogger,
  version,
  ...errors,
};
