// The addon's raw calls (src/fast.rs), declared by hand: napi-rs generates
// native.d.ts only from the functions it wraps. test/types/agree.ts checks these
// against native.d.ts and index.d.ts.

import type { HoldInfo } from './native';

/**
 * Acquires, waiting at most `waitMs` (unbounded when absent); `null` when not
 * acquired in time. `cancelId` (from `newCancel`) lets the caller abort the wait.
 * Resolves with `seq * 2^21 + count` when the hold has no token and both fit, else
 * with a HoldInfo. `id` is a lock handle's id (`NativeClient.lock`, `multiLock`).
 */
export declare function lockAcquire(id: number, waitMs?: number | null, leaseMs?: number | null, cancelId?: number | null): Promise<number | HoldInfo | null>
/** Releases one level; resolves with the levels left (0 = unlocked). */
export declare function lockRelease(id: number): Promise<number>
