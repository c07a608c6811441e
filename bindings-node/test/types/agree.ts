// Type-level check (tsc, run by test.sh): the hand-written public declarations
// (index.d.ts) agree with the generated native ones (native.d.ts) wherever the JS
// layer (lib/) passes a native value or option through. Compiles or fails; never runs.

import type * as native from '../../native';
import type * as fast from '../../fast';
import type {
  Client, ConnectOptions, CountDownLatch, Election, Hold, Lock, LockKind, LockStatus, LogRecord, Permit, PermitExpirableSemaphore, Quorum, Semaphore,
} from '../..';

/** Exactly the same type. */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
// napi declares a returned `Option` as `T | undefined | null`; at run time it is `T | null`.
type Napi<T> = Exclude<T, undefined>;
type Resolved<F extends (...args: any) => any> = Napi<Awaited<ReturnType<F>>>;

declare function agree<A, B>(same: Equal<A, B>): void;

// Client.connect passes its options through.
agree<Required<native.ConnectOptions>, Required<ConnectOptions>>(true);
agree<Parameters<typeof native.connect>[0], Parameters<typeof Client.connect>[0]>(true);

// Getters and queries of the client.
agree<native.NativeClient['id'], Client['id']>(true);
agree<native.NativeClient['closed'], Client['closed']>(true);
agree<ReturnType<native.NativeClient['subscribedChannels']>, ReturnType<Client['subscribedChannels']>>(true);
agree<ReturnType<native.NativeClient['heldCount']>, ReturnType<Client['heldCount']>>(true);

// Getters and queries of a lock (native functions on its handle's id).
type LockId = ReturnType<native.NativeClient['lock']>;
agree<ReturnType<typeof native.lockName>, Lock['name']>(true);
agree<ReturnType<typeof native.lockOwner>, Lock['owner']>(true);
agree<ReturnType<typeof native.lockFenced>, Lock['fenced']>(true);
agree<ReturnType<typeof native.lockLost>, Lock['lost']>(true);
agree<ReturnType<typeof native.lockToken>, Lock['token']>(true);
agree<Resolved<typeof native.lockIsLocked>, Awaited<ReturnType<Lock['isLocked']>>>(true);
agree<Resolved<typeof native.lockIsHeld>, Awaited<ReturnType<Lock['isHeld']>>>(true);
agree<Resolved<typeof native.lockHoldCount>, Awaited<ReturnType<Lock['holdCount']>>>(true);
agree<Resolved<typeof native.lockRemainingLeaseMs>, Awaited<ReturnType<Lock['remainingLeaseMs']>>>(true);
agree<Resolved<typeof native.lockForceUnlock>, Awaited<ReturnType<Lock['forceUnlock']>>>(true);

// Every call on a lock, the raw ones (fast.d.ts) too, takes the id the client made;
// a fenced hold's token is the one Hold shows.
agree<Parameters<typeof native.lockName>[0], LockId>(true);
agree<Parameters<typeof native.lockDrop>[0], LockId>(true);
agree<Parameters<typeof fast.lockAcquire>[0], LockId>(true);
agree<Parameters<typeof fast.lockRelease>[0], LockId>(true);
agree<NonNullable<native.HoldInfo['token']>, NonNullable<Hold['token']>>(true);

// A multi-lock's quorum is passed through; it is made from its members' ids and has one.
agree<Lock['quorum'] extends ReturnType<typeof native.lockQuorum> ? true : false, true>(true);
agree<Quorum extends Parameters<typeof native.multiLock>[1] ? true : false, true>(true);
agree<Parameters<typeof native.multiLock>[0], Array<LockId>>(true);
agree<ReturnType<typeof native.multiLock>, LockId>(true);

// The kind is the core's name of it: the public kinds are the native ones.
agree<ReturnType<typeof native.lockKind>, LockKind>(true);

// A hold is made from what acquire resolves with (`token ?? null`, `count`).
agree<Napi<native.HoldInfo['token']> | null, Hold['token']>(true);
agree<native.HoldInfo['count'], Hold['holdCount']>(true);

// status() passes the native snapshot through, absent values as null.
type NativeStatus = Resolved<typeof native.lockStatus>;
agree<NativeStatus['name'], LockStatus['name']>(true);
agree<NativeStatus['subscribers'], LockStatus['subscribers']>(true);
agree<Napi<NativeStatus['remainingLeaseMs']> | null, LockStatus['remainingLeaseMs']>(true);
agree<Napi<NativeStatus['lastToken']> | null, LockStatus['lastToken']>(true);
agree<Napi<NativeStatus['evictionPolicy']> | null, LockStatus['evictionPolicy']>(true);
agree<NativeStatus['holders'][number]['owner'], LockStatus['holders'][number]['owner']>(true);
agree<NativeStatus['holders'][number]['count'], LockStatus['holders'][number]['count']>(true);

// Holders (status, inspect, lastHolder, NotAcquiredError.holder) are the native ones,
// every absent field as null (lib/holder.js).
type NullFor<T> = { [K in keyof T]-?: undefined extends T[K] ? Exclude<T[K], undefined> | null : T[K] };
agree<NullFor<NativeStatus['holders'][number]>, LockStatus['holders'][number]>(true);
agree<NullFor<native.HolderStatus>, NonNullable<ReturnType<Lock['lastHolder']>>>(true);
agree<Napi<ReturnType<typeof native.lockLastHolder>>, native.HolderStatus | null>(true);
agree<Parameters<typeof native.lockSetHolderLabel>[1], Lock['label'] | undefined>(true);

// setLogger's function gets the native record as is (the level narrowed to tracing's five).
agree<LogRecord['level'] extends native.LogRecord['level'] ? true : false, true>(true);
agree<Omit<native.LogRecord, 'level'>, Omit<LogRecord, 'level'>>(true);

// metrics() and metricsText() pass the native values through.
agree<ReturnType<native.NativeClient['metrics']>, ReturnType<Client['metrics']>>(true);
agree<ReturnType<native.NativeClient['metricsText']>, ReturnType<Client['metricsText']>>(true);
agree<NativeStatus['holders'][number]['info'] extends LockStatus['holders'][number]['info'] | undefined ? true : false, true>(true);

// extend / reacquire resolve with the native ms.
agree<Awaited<ReturnType<typeof native.lockExtend>>, Awaited<ReturnType<Lock['extend']>>>(true);
agree<Awaited<ReturnType<typeof native.lockSetLease>>, Awaited<ReturnType<Lock['extend']>>>(true);
agree<Awaited<ReturnType<typeof native.lockReacquire>>, Awaited<ReturnType<Lock['reacquire']>>>(true);

// The other shapes pass native names and counts through.
agree<native.NativeSemaphore['name'], Semaphore['name']>(true);
agree<native.NativePermitSemaphore['name'], PermitExpirableSemaphore['name']>(true);
agree<native.NativeLatch['name'], CountDownLatch['name']>(true);
agree<Awaited<ReturnType<native.NativeSemaphore['trySetPermits']>>, Awaited<ReturnType<Semaphore['trySetPermits']>>>(true);
agree<Awaited<ReturnType<native.NativeSemaphore['release']>>, Awaited<ReturnType<Semaphore['release']>>>(true);
agree<Awaited<ReturnType<native.NativeSemaphore['available']>>, Awaited<ReturnType<Semaphore['available']>>>(true);
agree<Awaited<ReturnType<native.NativeSemaphore['drain']>>, Awaited<ReturnType<Semaphore['drain']>>>(true);
agree<Parameters<native.NativeSemaphore['trySetPermits']>[0], Parameters<Semaphore['trySetPermits']>[0]>(true);
agree<Awaited<ReturnType<native.NativePermitSemaphore['trySetPermits']>>, Awaited<ReturnType<PermitExpirableSemaphore['trySetPermits']>>>(true);
agree<Awaited<ReturnType<native.NativePermitSemaphore['release']>>, Awaited<ReturnType<PermitExpirableSemaphore['release']>>>(true);
agree<Awaited<ReturnType<native.NativePermitSemaphore['available']>>, Awaited<ReturnType<PermitExpirableSemaphore['available']>>>(true);
// A permit's id is the string the native acquire resolves with.
agree<Resolved<native.NativePermitSemaphore['acquire']>, Permit['id'] | null>(true);
agree<Awaited<ReturnType<native.NativeLatch['trySetCount']>>, Awaited<ReturnType<CountDownLatch['trySetCount']>>>(true);
agree<Awaited<ReturnType<native.NativeLatch['countDown']>>, Awaited<ReturnType<CountDownLatch['countDown']>>>(true);
agree<Awaited<ReturnType<native.NativeLatch['count']>>, Awaited<ReturnType<CountDownLatch['count']>>>(true);
agree<Awaited<ReturnType<native.NativeLatch['wait']>>, Awaited<ReturnType<CountDownLatch['wait']>>>(true);
// A read-write lock's two sides are native lock handles like any lock's.
agree<ReturnType<native.NativeClient['readWriteLock']>, Array<LockId>>(true);

// An election passes its name through, and its leader's term (a bigint) and holder.
agree<native.NativeElection['name'], Election['name']>(true);
agree<Parameters<native.NativeClient['election']>[0], Exclude<Parameters<Client['election']>[0], Uint8Array> | Buffer>(true);
agree<native.LeaderInfo['term'], NonNullable<Awaited<ReturnType<Election['leader']>>>['term']>(true);
