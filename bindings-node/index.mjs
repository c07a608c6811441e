// ESM entry: the same objects as the CommonJS entry (one native addon per process).
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const ferrolock = require('./index.js');

export const {
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
  FerrolockError,
  ArgumentTypeError,
  NotAcquiredError,
  NotOwnerError,
  LockLostError,
  ConnectionError,
  WrongTypeError,
  InvalidArgumentError,
  PermissionDeniedError,
  NotReplicatedError,
  CancelledError,
  AbortError,
  ClientClosedError,
  InternalError,
} = ferrolock;

export default ferrolock;
