// Type definitions for ferrolock (hand-written; see index.js). The native addon's
// own declarations are generated into native.d.ts; test/types/agree.ts checks
// that the two agree where the JS layer passes native values through.
/// <reference types="node" />

import { EventEmitter } from 'node:events';

// `Symbol.asyncDispose` is typed by @types/node; at run time ferrolock defines it
// on Node versions that lack it (Node 20), as Symbol.for('Symbol.asyncDispose').

/**
 * Settings of a client: durations in milliseconds, the drift factor, and, behind
 * Sentinel, the sentinels' own credentials and the replica acknowledgement.
 */
export interface ConnectOptions {
  /** Lease of locks taken without `leaseMs`; renewed every third of it. Default 30000. */
  watchdogTimeoutMs?: number;
  /** How long one Redis command may take. Default 2000. */
  responseTimeoutMs?: number;
  /** How long one connection attempt may take. Default 2000. */
  connectTimeoutMs?: number;
  /** How long a release with a lost reply is retried. Default 5000. */
  retryWindowMs?: number;
  /**
   * Clock drift allowance, as a fraction of the lease (0 to 0.5; else the connect
   * rejects with `InvalidArgumentError`). A holder counts its hold as lost
   * `lease x driftFactor + 2 ms` before Redis would expire it. Default 0.01.
   */
  driftFactor?: number;
  /**
   * User name for the sentinels themselves (with `sentinelPassword`), for a
   * `redis+sentinel://` URL; the URL's credentials are the data nodes'.
   */
  sentinelUsername?: string;
  /** Password for the sentinels themselves (their `requirepass`), when they have one. */
  sentinelPassword?: string;
  /**
   * Behind Sentinel and on a Cluster, how many of the master's replicas must
   * acknowledge an acquire (`WAIT`, within `replicaAckTimeoutMs`) before it resolves:
   * `'one'` (the default; `true` too), `'majority'` (floor(n/2)+1 of the n replicas the
   * master should have), `'all'`, or `'off'` (`false`: no wait). One that falls short
   * is undone and rejects with `NotReplicatedError` (naming how many acknowledged out
   * of how many), and so does every acquire while the master has no replica (but
   * under `'off'`). It narrows the window in which a failover loses a fresh lock; it
   * cannot close it (replication stays asynchronous). An unknown name rejects with
   * `InvalidArgumentError`. No effect on one server.
   */
  replicaAck?: ReplicaAck | boolean;
  /**
   * With `replicaAck`: count only replicas that fsynced the acquire to their
   * append-only file (`WAITAOF`, Redis 7.2 or later; an older server rejects acquires
   * with `InvalidArgumentError` naming its version). Default false.
   */
  replicaAckAof?: boolean;
  /** How long the replica acknowledgement may take (1 to 600000). Default 1000. */
  replicaAckTimeoutMs?: number;
  /**
   * Names every connection `ferrolock:<client id>:<appName>` (`CLIENT SETNAME`), so
   * `CLIENT LIST` tells which process holds which connection. 1 to 64 characters of
   * `[A-Za-z0-9._-]`; else the connect rejects with `InvalidArgumentError`.
   */
  appName?: string;
  /**
   * When a holder leaves a note beside its hold (app name, host, pid, label, since
   * when) for `status()`, `inspect()`, `ferrolock status` and the waiters it keeps
   * waiting: `'off'`, `'long'` (holds that outlive `holderNoteAfterMs`: a short hold
   * costs nothing) or `'always'` (one more call per acquisition). Default `'long'`.
   */
  holderNotes?: HolderNotes;
  /** With `holderNotes: 'long'`: how long a hold lasts before its note is written. Default 1000. */
  holderNoteAfterMs?: number;
  /**
   * An acquire that has waited this long logs, at INFO (`setLogger`, `FERROLOCK_LOG`),
   * the lock and who holds it, and again each time its wait doubles. `false`: never.
   * Default 10000.
   */
  slowWaitLogMs?: number | false;
}

/** When holders write their notes (`ConnectOptions.holderNotes`). */
export type HolderNotes = 'off' | 'long' | 'always';

/** How many replicas must acknowledge an acquire (see `ConnectOptions.replicaAck`). */
export type ReplicaAck = 'off' | 'one' | 'majority' | 'all';

/**
 * Which lock: reentrant (Redisson's `RLock`), fenced (`RFencedLock`), fair
 * (`RFairLock`), or the read or write side of a read-write lock (`RReadWriteLock`).
 */
export type LockKind = 'reentrant' | 'fenced' | 'fair' | 'read' | 'write';

/** Who holds: options of `client.lock()` and the other lock constructors. */
export interface LockOptions {
  /** Explicit holder id: the owner field becomes `<client-id>:<holderId>`. */
  holderId?: number | bigint;
  /** Explicit full owner field, to hand a hold over between clients. */
  owner?: string;
  /**
   * Names this holder (the thread, task or job) in its notes: `thread` in
   * `status()`, `inspect()`, `lastHolder()` and the waiters' logs. At most 600 bytes.
   */
  label?: string;
}

/** Options of `lock.acquire()`. */
export interface AcquireOptions {
  /** Explicit lease: the lock expires after it, with no renewal. Default: watchdog lease, renewed. */
  leaseMs?: number;
  /** Aborts the wait: rejects with an AbortError (`code === 'ERR_CANCELLED'`), nothing held. */
  signal?: AbortSignal;
  /** Longest wait; when it runs out `acquire` rejects with `NotAcquiredError`. Default: no bound. */
  waitMs?: number;
  /**
   * Names this holder in its notes from now on (the thread, task or job), as the
   * lock's `label` option does; `null` removes it. At most 600 bytes.
   */
  label?: string | null;
}

/** Options of `lock.tryAcquire()`. */
export interface TryAcquireOptions {
  /** Longest wait (0 = one attempt). Default 0. */
  waitMs?: number;
  /** Explicit lease: the lock expires after it, with no renewal. Default: watchdog lease, renewed. */
  leaseMs?: number;
  /** Aborts the wait: rejects with an AbortError (`code === 'ERR_CANCELLED'`), nothing held. */
  signal?: AbortSignal;
  /**
   * Names this holder in its notes from now on (the thread, task or job), as the
   * lock's `label` option does; `null` removes it. At most 600 bytes.
   */
  label?: string | null;
}

/** Options of `lock.extend()` / `hold.extend()`. */
export interface ExtendOptions {
  /** The lease becomes `ms` instead of growing by it (redis-py's `replace_ttl`). */
  replace?: boolean;
}

/** How many members a multi-lock needs: more than half (Redlock) or all (MultiLock). */
export type Quorum = 'majority' | 'all';

/** Options of `Lock.multi()`. */
export interface MultiLockOptions {
  /** `'majority'`: N/2+1 members (Redlock); `'all'`: every member (MultiLock). Required. */
  quorum: Quorum;
}

export interface RedlockConnectOptions extends ConnectOptions {
  /** `'majority'` (Redlock, the default) or `'all'` (MultiLock). */
  quorum?: Quorum;
}

/** Options of `lock.using()`. */
export interface UsingOptions {
  /** Explicit lease: the lock expires after it, with no renewal. Default: watchdog lease, renewed. */
  leaseMs?: number;
  /** Longest wait; when it runs out `using` rejects with `NotAcquiredError`. Default: no bound. */
  waitMs?: number;
  /** Aborts the wait: rejects with an AbortError (`code === 'ERR_CANCELLED'`), nothing held. */
  signal?: AbortSignal;
  /**
   * Names this holder in its notes from now on (the thread, task or job), as the
   * lock's `label` option does; `null` removes it. At most 600 bytes.
   */
  label?: string | null;
  /**
   * The hold ends no sooner than this long after it was taken, even when `fn` ends
   * (or throws) sooner: the rest is left on a fixed lease, nothing renews or releases
   * it. A job scheduled on several hosts, each trying with `waitMs: 0`, runs once per
   * tick when this is longer than the hosts' clock skew (single locks).
   */
  minHoldMs?: number;
}

/** The `code` of every ferrolock error, one per kind (the same as Python's `LockError.code`). */
export type ErrorCode =
  | 'ERR_NOT_ACQUIRED'
  | 'ERR_NOT_OWNER'
  | 'ERR_LOCK_LOST'
  | 'ERR_CONNECTION'
  | 'ERR_WRONG_TYPE'
  | 'ERR_INVALID_ARGUMENT'
  | 'ERR_PERMISSION'
  | 'ERR_NOT_REPLICATED'
  | 'ERR_CANCELLED'
  | 'ERR_CLIENT_CLOSED'
  | 'ERR_INTERNAL';

/**
 * Base class of every error ferrolock raises. (`instanceof FerrolockError` is also true
 * of an `ArgumentTypeError`, which is a `TypeError`.)
 */
export class FerrolockError extends Error {
  /** Which kind of error: stable across versions, the thing to switch on. */
  readonly code: ErrorCode;
  constructor(message: string, code: ErrorCode, options?: ErrorOptions);
}
/**
 * A value of the wrong type, an options object that is not an object, or an option
 * key ferrolock does not know (`{ waitMS }`, `{ timeout }`); the message names the
 * valid keys. A `TypeError` with `code === 'ERR_INVALID_ARGUMENT'`, for which
 * `instanceof InvalidArgumentError` and `instanceof FerrolockError` are true too.
 */
export class ArgumentTypeError extends TypeError {
  /** This class's `ErrorCode`. */
  readonly code: 'ERR_INVALID_ARGUMENT';
  constructor(message: string, options?: ErrorOptions);
}
/** A bounded `acquire`/`using` ran out of time. */
export class NotAcquiredError extends FerrolockError {
  /** This class's `ErrorCode`. */
  readonly code: 'ERR_NOT_ACQUIRED';
  /**
   * Who held the lock when the wait ran out (`lock.lastHolder()`); null when it was
   * free by then, could not be read, or the acquire did not wait (`waitMs: 0`). The
   * message names it too.
   */
  holder?: HolderStatus | null;
  constructor(message: string, options?: ErrorOptions);
}
/** Release by a handle that does not hold the lock. */
export class NotOwnerError extends FerrolockError {
  /** This class's `ErrorCode`. */
  readonly code: 'ERR_NOT_OWNER';
  constructor(message: string, options?: ErrorOptions);
}
/** The hold was lost (expired, force-unlocked, server lost it). */
export class LockLostError extends FerrolockError {
  /** This class's `ErrorCode`. */
  readonly code: 'ERR_LOCK_LOST';
  /**
   * Why, in a few words (e.g. "its lease (5000 ms) ran out before it was renewed or
   * released"), on the error of a `'lost'` event and of an aborted `signal`; the
   * message names the lock and the holder too.
   */
  readonly reason?: string;
  constructor(message: string, options?: ErrorOptions);
}
/** I/O error, refused connection, timeout or failed authentication. */
export class ConnectionError extends FerrolockError {
  /** This class's `ErrorCode`. */
  readonly code: 'ERR_CONNECTION';
  constructor(message: string, options?: ErrorOptions);
}
/** The key at the lock name is not a lock. */
export class WrongTypeError extends FerrolockError {
  /** This class's `ErrorCode`. */
  readonly code: 'ERR_WRONG_TYPE';
  constructor(message: string, options?: ErrorOptions);
}
/** Bad input: name, duration, URL or option out of range (wrong types: `ArgumentTypeError`). */
export class InvalidArgumentError extends FerrolockError {
  /** This class's `ErrorCode`. */
  readonly code: 'ERR_INVALID_ARGUMENT';
  constructor(message: string, options?: ErrorOptions);
}
/**
 * A Redis ACL refused a command, key or channel (`NOPERM`). The message names what
 * was refused and the ACL rule that would allow it (e.g. `+hincrby`).
 */
export class PermissionDeniedError extends FerrolockError {
  /** This class's `ErrorCode`. */
  readonly code: 'ERR_PERMISSION';
  constructor(message: string, options?: ErrorOptions);
}
/**
 * Behind Sentinel or on a Cluster: fewer replicas acknowledged an acquire within
 * `replicaAckTimeoutMs` than the `replicaAck` policy needs (the message names how
 * many of how many), or the master has none, so the acquire was undone (a failover
 * could have lost it). Nothing is held; retrying is safe.
 */
export class NotReplicatedError extends FerrolockError {
  /** This class's `ErrorCode`. */
  readonly code: 'ERR_NOT_REPLICATED';
  constructor(message: string, options?: ErrorOptions);
}
/** A wait was aborted by an AbortSignal. `name === 'AbortError'`. */
export class CancelledError extends FerrolockError {
  /** This class's `ErrorCode`. */
  readonly code: 'ERR_CANCELLED';
  /** `'AbortError'`, as for every aborted wait in Node. */
  readonly name: 'AbortError';
  constructor(message: string, options?: ErrorOptions);
}
export { CancelledError as AbortError };
/**
 * A call on a client after `close()`: `client.lock()`, every call of its locks, and
 * acquires that were waiting when it closed. The message says to create a new client.
 */
export class ClientClosedError extends FerrolockError {
  /** This class's `ErrorCode`. */
  readonly code: 'ERR_CLIENT_CLOSED';
  constructor(message: string, options?: ErrorOptions);
}
/** A bug in ferrolock, or a reply it does not understand. */
export class InternalError extends FerrolockError {
  /** This class's `ErrorCode`. */
  readonly code: 'ERR_INTERNAL';
  constructor(message: string, options?: ErrorOptions);
}

/**
 * One owner field of a lock with its note: in `lock.status()`, `client.inspect()`,
 * `lock.lastHolder()` and `NotAcquiredError.holder`. The note's fields are null when
 * it has none (a short hold writes none by default: `ConnectOptions.holderNotes`).
 */
export interface HolderStatus {
  /** `<client-id>:<holder-id>` (ferrolock) or `<uuid>:<thread-id>` (Redisson). */
  owner: string;
  /** How many times that holder has entered the lock. */
  count: number;
  /** The note as stored (the client's JSON note, or the text of `lock.setHolderInfo()`), else null. */
  info: string | null;
  /** The holder client's `appName`. */
  app: string | null;
  /** The holder's host name. */
  host: string | null;
  /** The holder's process id. */
  pid: number | null;
  /** The holder's thread, task or label (Node: the lock's `label`). */
  thread: string | null;
  /** What the holder runs (`ferrolock run`: its command). */
  command: string | null;
  /** True when the watchdog renews the hold (no `leaseMs`). */
  renewed: boolean | null;
  /** When the hold began, Unix ms by the Redis server's clock. */
  since: number | null;
  /** How long it has held the lock (server clock), ms. */
  heldForMs: number | null;
  /** For people: "billing on host-7 pid 4242 (thread worker-3) for 5 m 12 s"; the owner field when there is no note. */
  description: string;
}

/** A lock as the server sees it at one moment (`lock.status()`). */
export interface LockStatus {
  /** The lock name asked about. */
  name: string;
  /** Every holder with its hold count; empty when the lock is free. */
  holders: HolderStatus[];
  /** Ms left on the lease; null when free, Infinity for a lock without expiry. */
  remainingLeaseMs: number | null;
  /** Connections subscribed to the lock's release channel: one per client with waiters (a client stays subscribed 100 ms after its last waiter left). */
  subscribers: number;
  /** The last fencing token handed out for this name, else null. */
  lastToken: bigint | null;
  /**
   * The server's `maxmemory-policy` when it may evict lock keys (`maxmemory` set and a policy
   * other than `noeviction`: a held lock could vanish under memory pressure; set `noeviction`);
   * null when it cannot, or its ACL refuses INFO. Read once when the client connected.
   */
  evictionPolicy: string | null;
}

/** A kind `client.inspect()` can be asked to read a name as. */
export type InspectKind =
  | 'lock'
  | 'fenced_lock'
  | 'fair_lock'
  | 'read_write_lock'
  | 'semaphore'
  | 'permit_expirable_semaphore'
  | 'count_down_latch';

/** A permit of a permit-expirable semaphore that is out. */
export interface PermitOut {
  /** Its id (32 hex digits). */
  id: string;
  /** Ms left on its lease by this machine's clock (negative: expired); null: no lease. */
  leaseLeftMs: number | null;
}

/** What a name is and what is going on there (`client.inspect()`). */
export interface Inspection {
  /** The name asked about. */
  name: string;
  /** What its keys say it is; `'semaphore_or_latch'`: a number nothing waits on. */
  kind: InspectKind | 'semaphore_or_latch';
  /** A lock's holders with their notes; empty when free or not a lock. */
  holders: HolderStatus[];
  /** Ms left on a held lock's lease; null when free or not a lock, Infinity without expiry. */
  leaseLeftMs: number | null;
  /** Clients waiting: a fair lock's queue length, else the clients subscribed to its channel. */
  waiters: number;
  /** A fair lock's waiting owner fields, first first. */
  queue: string[];
  /** A read-write lock's side that holds it (`'read'` or `'write'`), else null. */
  mode: string | null;
  /** A semaphore's free permits (also for `'semaphore_or_latch'`), else null. */
  permits: number | null;
  /** A permit-expirable semaphore's permits that are out. */
  permitsOut: PermitOut[];
  /** A count-down latch's count (also for `'semaphore_or_latch'`), else null. */
  count: number | null;
  /** The last fencing token handed out for this name, else null. */
  lastToken: bigint | null;
  /** The server's `maxmemory-policy` when it may evict the name's keys (see `LockStatus.evictionPolicy`), else null. */
  evictionPolicy: string | null;
}

/** One acquisition, as returned by `lock.acquire()`. Disposable with `await using`. */
export class Hold {
  private constructor();
  /** The handle this hold belongs to. */
  readonly lock: Lock;
  /** Fencing token of this acquisition (fenced locks), else null. */
  readonly token: bigint | null;
  /** Hold count right after this acquisition (1 = a new hold). */
  readonly holdCount: number;
  /** Aborted, with a `LockLostError` as reason, when this hold is lost. */
  readonly signal: AbortSignal;
  /** True once this hold was lost. */
  readonly lost: boolean;
  /** True once released. */
  readonly released: boolean;
  /** `lock.extend(ms, options)`; rejects with `NotOwnerError` once this hold was released. */
  extend(ms: number, options?: ExtendOptions): Promise<number>;
  /** Releases this acquisition (one level); a second call does nothing. */
  release(): Promise<void>;
  /** For `await using`: awaits `release()` (a `Client` or `Redlock`: `close()`). */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * A handle on one lock name, or a multi-lock over several (`Lock.multi`, `redlock`,
 * `multiLock`, `Redlock`). The handle is the holder: it may re-enter, and must release as often.
 * While it holds, its client keeps it reachable: a hold ends only by a release, `using()` /
 * `await using` scope end, `client.close()`, process exit, or the end of an explicit lease,
 * never by garbage collection.
 *
 * A hold lost while nobody listens (no `'lost'` listener, no abort listener on its
 * `signal`) is also reported as a process warning (`process.on('warning')`, type
 * `FerrolockWarning`, code `FERROLOCK_LOCK_LOST`) naming the lock and the reason.
 * `util.inspect(lock)` shows its name, kind and local state (held, count, lost, token).
 */
export class Lock extends EventEmitter {
  /**
   * One lock over `locks` (single lock handles, usually one name on several clients, one
   * client per independent Redis server), held while `quorum` of them are: `'majority'`
   * (Redlock, N/2+1) or `'all'` (MultiLock). A new holder with the API of a single lock;
   * `token` is always null, and status queries (`isLocked`, `isHeld`, `holdCount`,
   * `remainingLeaseMs`, `forceUnlock`) reject with `InvalidArgumentError`: ask its `members`.
   * Throws `InvalidArgumentError` for no members, a member that is not a single `Lock`, or
   * one lock (one name on one client) twice.
   */
  static multi(locks: Iterable<Lock>, options: MultiLockOptions): Lock;
  /** 'lost': a hold of this handle was lost (expired, force-unlocked, failover). */
  on(event: 'lost', listener: (err: LockLostError) => void): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
  /** 'lost', once. */
  once(event: 'lost', listener: (err: LockLostError) => void): this;
  once(event: string | symbol, listener: (...args: any[]) => void): this;
  /** The same as `on('lost', listener)`. */
  addListener(event: 'lost', listener: (err: LockLostError) => void): this;
  addListener(event: string | symbol, listener: (...args: any[]) => void): this;
  private constructor();
  /** The name it was made with. */
  readonly name: string;
  /** Owner field this handle writes: `<client-id>:<holder-id>`. */
  readonly owner: string;
  /**
   * Which lock: `'reentrant'` (`client.lock()`), `'fenced'` (`client.fencedLock()`),
   * `'fair'` (`client.fairLock()`), `'read'` / `'write'` (`client.readWriteLock()`).
   */
  readonly kind: LockKind;
  /** True for fenced locks (never a multi-lock). */
  readonly fenced: boolean;
  /** Fencing token of the current hold (fenced locks), else null; always null for a multi-lock. */
  readonly token: bigint | null;
  /** A multi-lock's member locks, in order; empty for a single lock. */
  readonly members: readonly Lock[];
  /** A multi-lock's quorum; null for a single lock. */
  readonly quorum: Quorum | null;
  /** True if the latest hold of this handle was lost (until it acquires again). */
  readonly lost: boolean;
  /** Aborted when the current hold is lost. */
  readonly signal: AbortSignal;
  /** What names this holder in its notes (the `label` option of the lock or of the latest acquire that gave one), else null. */
  readonly label: string | null;
  /**
   * Who held the lock when this handle's latest acquire with a wait (`waitMs` > 0)
   * timed out, read at that moment; null if none did, or the lock was free by then.
   */
  lastHolder(): HolderStatus | null;
  /** Waits until acquired. */
  acquire(options?: AcquireOptions): Promise<Hold>;
  /** One attempt, or waits up to `waitMs`. Resolves false when not acquired. */
  tryAcquire(options?: TryAcquireOptions): Promise<boolean>;
  /** Releases one level. Rejects with `NotOwnerError` if this handle does not hold it. */
  release(): Promise<void>;
  /** Releases every level of this handle's hold. */
  releaseAll(): Promise<void>;
  /** True if anyone holds the lock. */
  isLocked(): Promise<boolean>;
  /** True if this handle holds it (server view). */
  isHeld(): Promise<boolean>;
  /** This handle's hold count (server view). */
  holdCount(): Promise<number>;
  /** Ms left on the lease of whoever holds it; null when not locked; Infinity without expiry. */
  remainingLeaseMs(): Promise<number | null>;
  /**
   * Holders (with hold counts and notes), lease left, subscribed clients and the
   * last fencing token, as `ferrolock status` shows them. Rejects with
   * `InvalidArgumentError` on a multi-lock: ask its members.
   */
  status(): Promise<LockStatus>;
  /**
   * Adds `ms` to the lease of this handle's hold (taken with `leaseMs`), or with
   * `{ replace: true }` sets the lease to `ms`; resolves with the ms now left. Rejects
   * with `NotOwnerError` (holds nothing), `LockLostError` (its hold was lost) or
   * `InvalidArgumentError` (a watchdog-renewed hold, or `ms` out of range).
   */
  extend(ms: number, options?: ExtendOptions): Promise<number>;
  /** Resets the lease to the `leaseMs` the hold was taken with; resolves with it (ms). Errors as `extend`. */
  reacquire(): Promise<number>;
  /**
   * Attaches `info` (at most 1024 bytes; `null` removes it) to this holder's entry in
   * `status()`. Rejects with `NotOwnerError` if this handle does not hold. Kept as long
   * as the lease it was set under: set it again after the watchdog renewed the lease.
   */
  setHolderInfo(info: string | null): Promise<void>;
  /** Deletes the lock whoever holds it and wakes a waiter. True if it was locked. */
  forceUnlock(): Promise<boolean>;
  /** Acquires, runs `fn`, always releases; resolves with what `fn` returned. */
  using<T>(fn: (signal: AbortSignal, hold: Hold) => T | Promise<T>, options?: UsingOptions): Promise<T>;
}

/**
 * Redisson's `RReadWriteLock`: many readers or one writer. Both sides are Locks (the
 * whole Lock API) on one holder, so the writer may also take read holds and keep them
 * after it stops writing. Each call returns the same Lock object.
 */
export class ReadWriteLock {
  private constructor();
  /** The name it was made with. */
  readonly name: string;
  /** The read side (`kind === 'read'`): held by many readers at once, never with another holder's write. */
  readLock(): Lock;
  /** The write side (`kind === 'write'`): held by one holder alone (its own read holds aside). */
  writeLock(): Lock;
}

/** Options of `semaphore.acquire()` and `semaphore.using()`. */
export interface SemaphoreAcquireOptions {
  /** How many permits to take (1 or more). Default 1. */
  permits?: number;
  /** Longest wait; when it runs out `acquire` resolves `null` (`using` rejects with `NotAcquiredError`). Default: no bound. */
  waitMs?: number;
  /** Aborts the wait: rejects with an AbortError (`code === 'ERR_CANCELLED'`), nothing taken. */
  signal?: AbortSignal;
}

/** Permits taken by `semaphore.acquire()`. Disposable with `await using`. */
export class Permits {
  private constructor();
  /** The semaphore they were taken from. */
  readonly semaphore: Semaphore;
  /** How many permits these are. */
  readonly count: number;
  /** True once `release()` (or dispose) ran. */
  readonly released: boolean;
  /** Gives them back (waking waiters); a second call does nothing. */
  release(): Promise<void>;
  /** For `await using`: awaits `release()` (a `Client` or `Redlock`: `close()`). */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Redisson's `RSemaphore`: a count of free permits under one name. Permits are not
 * owned: anyone may give back any number, and a process that ends holding some does
 * not give them back. Waiters are woken by release messages (no polling).
 */
export class Semaphore {
  private constructor();
  /** The name it was made with. */
  readonly name: string;
  /** Gives it `permits` (0 or more) free permits if it does not exist yet; false if it does (left alone). */
  trySetPermits(permits: number): Promise<boolean>;
  /** Takes `permits` (default 1); `null` when not enough were free within `waitMs`. */
  acquire(options?: SemaphoreAcquireOptions): Promise<Permits | null>;
  /** Takes permits, runs `fn`, always gives them back; resolves with what `fn` returned. */
  using<T>(fn: (permits: Permits) => T | Promise<T>, options?: SemaphoreAcquireOptions): Promise<T>;
  /** Gives `permits` (default 1) back, whoever took them; resolves with the free permits right after. */
  release(permits?: number): Promise<number>;
  /** The free permits now (0 for a semaphore that does not exist). */
  available(): Promise<number>;
  /** Takes every free permit; resolves with how many. */
  drain(): Promise<number>;
}

/** Options of `permitExpirableSemaphore.acquire()` and `.using()`. */
export interface PermitAcquireOptions {
  /** Longest wait; when it runs out `acquire` resolves `null` (`using` rejects with `NotAcquiredError`). Default: no bound. */
  waitMs?: number;
  /** The permit comes back by itself after this. Default: no lease (out until released). */
  leaseMs?: number;
  /** Aborts the wait: rejects with an AbortError (`code === 'ERR_CANCELLED'`), nothing taken. */
  signal?: AbortSignal;
}

/** One permit of a permit-expirable semaphore. Disposable with `await using`. */
export class Permit {
  private constructor();
  /** The semaphore it was taken from. */
  readonly semaphore: PermitExpirableSemaphore;
  /** Its id: 32 hex digits, as Redisson shows them; `semaphore.release(id)` releases it from anywhere. */
  readonly id: string;
  /** The lease it was taken with, else null. */
  readonly leaseMs: number | null;
  /** True once `release()` (or dispose) ran. */
  readonly released: boolean;
  /** Releases it: true if it was out and in time; false if its lease had run out, or on a second call. */
  release(): Promise<boolean>;
  /** For `await using`: awaits `release()` (a `Client` or `Redlock`: `close()`). */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Redisson's `RPermitExpirableSemaphore`: permits with ids and optional leases; an
 * expired permit comes back by itself, and waiters wake by release messages or by the
 * nearest expiry.
 */
export class PermitExpirableSemaphore {
  private constructor();
  /** The name it was made with. */
  readonly name: string;
  /** Gives it `permits` (0 or more) free permits if it does not exist yet; false if it does (left alone). */
  trySetPermits(permits: number): Promise<boolean>;
  /** Takes a permit; `null` when none was free within `waitMs`. */
  acquire(options?: PermitAcquireOptions): Promise<Permit | null>;
  /** Takes a permit, runs `fn`, always releases it; resolves with what `fn` returned. */
  using<T>(fn: (permit: Permit) => T | Promise<T>, options?: PermitAcquireOptions): Promise<T>;
  /**
   * Releases a permit by id (any client may) or a `Permit`: true if it was out and in
   * time, false if its lease had run out or it was released already. A malformed id
   * rejects with `InvalidArgumentError`.
   */
  release(permit: Permit | string): Promise<boolean>;
  /** The free permits now, after the expired ones came back. */
  available(): Promise<number>;
}

/** Options of `latch.wait()`. */
export interface LatchWaitOptions {
  /** Longest wait; when it runs out `wait` resolves false. Default: no bound. */
  waitMs?: number;
  /** Aborts the wait: rejects with an AbortError (`code === 'ERR_CANCELLED'`). */
  signal?: AbortSignal;
}

/** Redisson's `RCountDownLatch`: open at 0 (or when it does not exist), waking every waiter. */
export class CountDownLatch {
  private constructor();
  /** The name it was made with. */
  readonly name: string;
  /** Sets the count (1 or more) of an open latch; false if it is still counting down (left alone). */
  trySetCount(count: number): Promise<boolean>;
  /** Counts down by one; resolves with the count left (0: now open). */
  countDown(): Promise<number>;
  /** The count now (0: open). */
  count(): Promise<number>;
  /** Waits until open: true once open, false when still counting down after `waitMs`. */
  wait(options?: LatchWaitOptions): Promise<boolean>;
}

/** Counts of one duration, in seconds. */
export interface Histogram {
  /** Upper bounds (seconds), ascending. */
  bounds: number[];
  /** `counts[i]`: observations in `(bounds[i-1], bounds[i]]`, not cumulative; the last (`bounds.length`) is above the last bound. */
  counts: number[];
  /** Sum of the observations (seconds). */
  sum: number;
  /** Number of observations. */
  count: number;
}

/** What a client's locks did since it connected (`client.metrics()`). */
export interface Metrics {
  /** The client these counters belong to (the `client` label of `metricsText()`). */
  clientId: string;
  /** Acquires by outcome: acquired, not acquired in time, failed (an error), cancelled. */
  acquired: number;
  /** Bounded acquire calls that ran out of time. */
  notAcquired: number;
  /** Acquire calls that failed with an error. */
  failed: number;
  /** Acquire calls that were aborted or whose client closed under them. */
  cancelled: number;
  /** From an acquire call to its outcome, every outcome. */
  wait: Histogram;
  /** From an acquisition to its release or loss. */
  hold: Histogram;
  /** Locks held now. */
  holdsNow: number;
  /** Acquire calls waiting for a release now. */
  waitersNow: number;
  /** Holds the watchdog renewed. */
  renewals: number;
  /** Renewal calls that failed (the hold is kept until its deadline and retried). */
  renewalFailures: number;
  /** Holds lost. */
  losses: number;
  /** Connections made again after one broke or stalled (commands and messages). */
  reconnects: number;
  /**
   * Failovers this client noticed (Sentinel's `+switch-master`, a reconnect onto
   * another or a restarted master, a cluster slot that changed masters); each makes
   * it check every hold at once.
   */
  failoversNoticed: number;
  /** From noticing a failover to reporting a hold it lost, per hold lost. */
  failoverLossReport: Histogram;
}

/** `util.inspect(client)` shows its id and whether it is closed. */
export class Client {
  private constructor();
  /**
   * Connects: `redis://[user:password@]host[:port][/db]` or `rediss://...` (one server,
   * or a cluster's seed node), `redis+sentinel://[user:password@]host:port[,host:port...]/<master name>[/<db>]`
   * (`rediss+sentinel://`), or `redis+cluster://[user:password@]host:port[,host:port...]`
   * (`rediss+cluster://`). A malformed URL rejects with `InvalidArgumentError`.
   */
  static connect(url: string, options?: ConnectOptions): Promise<Client>;
  /** Random UUID v4 of this client. */
  readonly id: string;
  /** True from the moment `close()` is called. */
  readonly closed: boolean;
  /** A reentrant lock handle (a new holder). */
  lock(name: string | Uint8Array, options?: LockOptions): Lock;
  /** A fenced lock handle: acquisitions yield strictly increasing bigint tokens. */
  fencedLock(name: string | Uint8Array, options?: LockOptions): Lock;
  /** A fair lock handle (Redisson's `RFairLock`): granted in arrival order, across clients. */
  fairLock(name: string | Uint8Array, options?: LockOptions): Lock;
  /**
   * The read-write lock `name` (Redisson's `RReadWriteLock`): two Locks on one holder
   * (a new one, or the one `holderId` / `owner` pick).
   */
  readWriteLock(name: string | Uint8Array, options?: LockOptions): ReadWriteLock;
  /**
   * A new candidate in the leader election `name`: the fenced lock of that name, for a
   * holder of its own (a Redisson `RLock` of the name excludes it and is excluded).
   */
  election(name: string | Uint8Array, options?: ElectionOptions): Election;
  /** The semaphore `name` (Redisson's `RSemaphore`): permits nobody owns. */
  semaphore(name: string | Uint8Array): Semaphore;
  /** The permit-expirable semaphore `name` (Redisson's `RPermitExpirableSemaphore`). */
  permitExpirableSemaphore(name: string | Uint8Array): PermitExpirableSemaphore;
  /** The count-down latch `name` (Redisson's `RCountDownLatch`). */
  countDownLatch(name: string | Uint8Array): CountDownLatch;
  /** Lock channels this client is subscribed to right now: those with waiting acquires, and for 100 ms those whose last waiter left (`metrics().waitersNow` counts the waiting acquires). */
  subscribedChannels(): number;
  /** Locks this client holds right now. */
  heldCount(): number;
  /** A snapshot of what this client's locks did since it connected; readable after close(). */
  metrics(): Metrics;
  /** `metrics()` in Prometheus' text exposition format (names `ferrolock_*`, label `client`). */
  metricsText(): string;
  /**
   * What `name` is, told from its keys, and what is going on there: holders with their
   * notes, lease left, waiters, permits or count, last fencing token. `kind` reads it as
   * that kind. WrongTypeError if the key holds something else.
   */
  inspect(name: string | Uint8Array, kind?: InspectKind | null): Promise<Inspection>;
  /**
   * The names of every lock-family object whose name starts with `prefix` (all without
   * one), sorted: one SCAN pass over the server, Sentinel's master or every master of a cluster.
   */
  scan(prefix?: string | Uint8Array): Promise<string[]>;
  /**
   * Releases what it holds, stops its waits (they reject with `ClientClosedError`),
   * closes its connections. The way to end holds nobody references any more. Every
   * later call on the client or its locks fails with `ClientClosedError`; `close()`
   * itself may be called again.
   */
  close(): Promise<void>;
  /** For `await using`: awaits `release()` (a `Client` or `Redlock`: `close()`). */
  [Symbol.asyncDispose](): Promise<void>;
}

/** Options of `client.election()`. */
export interface ElectionOptions {
  /** Names this candidate in its leader note (the replica, pod or job). At most 600 bytes. */
  label?: string | null;
}

/** Options of `election.campaign()`. */
export interface CampaignOptions {
  /** Longest wait; when it runs out `campaign` resolves null. Default: no bound (0: one try). */
  waitMs?: number;
  /** Aborts the campaign: rejects with an AbortError (`code === 'ERR_CANCELLED'`), nothing held. */
  signal?: AbortSignal;
}

/** Who leads an election. */
export interface Leader {
  /** The leadership's term: the fencing token its campaign took. */
  readonly term: bigint;
  /** Who it is: its owner field and note (`heldForMs` null when told by the new leader's announcement). */
  readonly holder: HolderStatus;
  /** Ms left on its lease when read or announced; null for a lock without expiry. */
  readonly leaseLeftMs: number | null;
}

/** One leadership of a candidate, from `election.campaign()`. */
export class Leadership {
  private constructor();
  /** The term: this leadership's fencing token, larger than every earlier leader's. */
  readonly term: bigint;
  /** Aborted (with a `LockLostError` as reason) when this leadership is lost; never by a resignation. */
  readonly signal: AbortSignal;
  /** True once this leadership was lost (told before another candidate can lead). */
  readonly lost: boolean;
  /** Resigns: true, or false if it was lost (or resigned) meanwhile. */
  resign(): Promise<boolean>;
  /** For `await using`: `resign()`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * A candidate in a leader election (`client.election(name)`): campaigns, leads with a
 * term (the fencing token of the election's lock), resigns. Emits `'lost'` (a
 * `LockLostError`) when a leadership of it is lost.
 */
export class Election extends EventEmitter {
  private constructor();
  /** The election's name. */
  readonly name: string;
  /** The owner field this candidate writes while it leads. */
  readonly owner: string;
  /** The fenced lock this candidate holds while it leads. */
  readonly lock: Lock;
  /** True while this candidate leads (until it resigns or learns of a loss). */
  readonly leading: boolean;
  /** The term of this candidate's leadership while it leads, else null. */
  readonly term: bigint | null;
  /** Waits (on pub/sub) until this candidate leads; null when `waitMs` ran out first. */
  campaign(options?: CampaignOptions): Promise<Leadership | null>;
  /** Ends this candidate's leadership: true if it led, false if it did not (any more). */
  resign(): Promise<boolean>;
  /** Who leads now (one read), or null. */
  leader(): Promise<Leader | null>;
  /** An observer of this election's changes of leader, subscribed from now on. */
  observe(): Promise<Observer>;
  /** 'lost': a leadership of this candidate was lost (expired, force-unlocked, failover). */
  on(event: 'lost', listener: (err: LockLostError) => void): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
  /** 'lost', once. */
  once(event: 'lost', listener: (err: LockLostError) => void): this;
  once(event: string | symbol, listener: (...args: any[]) => void): this;
  /** The same as `on('lost', listener)`. */
  addListener(event: 'lost', listener: (err: LockLostError) => void): this;
  addListener(event: string | symbol, listener: (...args: any[]) => void): this;
}

/** Options of `observer.next()`. */
export interface ObserverNextOptions {
  /** Longest wait; when it runs out `next` resolves undefined. Default: no bound. */
  timeoutMs?: number;
  /** Aborts the wait: rejects with an AbortError; no change is lost. */
  signal?: AbortSignal;
}

/**
 * An election's changes of leader, in order: who leads now, then each new leader, or
 * null when nobody leads. Woken by Redis and the leader's lease end, never by polling.
 */
export class Observer implements AsyncIterable<Leader | null> {
  private constructor();
  /** The next change; undefined when `timeoutMs` ran out first. */
  next(options?: ObserverNextOptions): Promise<Leader | null | undefined>;
  /** `for await (const leader of observer)`: each change, as `next()` without a timeout. */
  [Symbol.asyncIterator](): AsyncIterator<Leader | null>;
}

/** One of core's log events, as `setLogger`'s function receives it. */
export interface LogRecord {
  /** The event's level. */
  level: 'ERROR' | 'WARN' | 'INFO' | 'DEBUG' | 'TRACE';
  /** Where in core it comes from, e.g. `'ferrolock::waiting::subscriber'`. */
  target: string;
  /** The event's message. */
  message: string;
  /** The event's other fields (lock name, error, ...), as text. */
  fields: Record<string, string>;
}

/** Options of `setLogger()`. */
export interface SetLoggerOptions {
  /** Which events: a level or `target=level` directives (`'info'`, the default; `'warn'`; `'ferrolock=debug'`). */
  level?: string;
}

/**
 * Hands core's log events (reconnects, resubscribes, failed renewals, losses) to
 * `logger`, queued to the event loop (core never waits for it); `null` stops it.
 * Process-wide: a later call replaces the logger. Independent of the
 * `FERROLOCK_LOG=<filter>` environment variable, which writes them to stderr.
 */
export function setLogger(logger: ((record: LogRecord) => void) | null, options?: SetLoggerOptions): void;

/** The package's version (package.json's, the same as the Rust workspace's), e.g. `'0.1.0'`. */
export const version: string;

/** `Lock.multi(locks, { quorum: 'majority' })`: a Redlock over `locks`. */
export function redlock(locks: Iterable<Lock>): Lock;
/** `Lock.multi(locks, { quorum: 'all' })`: a MultiLock over `locks`. */
export function multiLock(locks: Iterable<Lock>): Lock;

/**
 * One client per independent Redis server, making multi-locks by name. Disposable with
 * `await using` (closes the clients).
 */
export class Redlock {
  private constructor();
  /**
   * Connects one client per URL (every server must be reachable now; a failed connect
   * closes the others and rejects with its error). Options: `quorum` (default
   * `'majority'`) and any `Client.connect` option, given to every client. Duplicate URLs
   * or an empty list reject with `InvalidArgumentError`.
   */
  static connect(urls: Iterable<string>, options?: RedlockConnectOptions): Promise<Redlock>;
  /** The clients, one per URL, in order. */
  readonly clients: readonly Client[];
  /** The quorum of every lock it makes. */
  readonly quorum: Quorum;
  /** True once every client is closed. */
  readonly closed: boolean;
  /** A multi-lock over `name` on every server (a new holder). */
  lock(name: string | Uint8Array, options?: LockOptions): Lock;
  /** Closes every client, releasing what they hold. */
  close(): Promise<void>;
  /** For `await using`: awaits `release()` (a `Client` or `Redlock`: `close()`). */
  [Symbol.asyncDispose](): Promise<void>;
}
