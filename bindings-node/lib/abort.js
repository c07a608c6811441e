'use strict';
// AbortSignal -> native cancel handles. One 'abort' listener per signal, however
// many waits share it (1000 acquires on one signal add one listener, not 1000).

const native = require('./native');
const { CancelledError, convert } = require('./errors');

const signalWaits = new WeakMap(); // signal -> { ids: Set<cancelId>, onAbort }

/** The error of a wait that `signal` aborted; `what` says what was waited for, and that nothing was taken. */
function abortError(signal, what = 'the wait for the lock was aborted; nothing is held') {
  return new CancelledError(what, { cause: signal.reason });
}

/** A cancel handle for one wait, cancelled when `signal` aborts. */
function watchSignal(signal) {
  const id = native.newCancel();
  let entry = signalWaits.get(signal);
  if (!entry) {
    const ids = new Set();
    const onAbort = () => {
      signalWaits.delete(signal);
      for (const waiting of ids) native.cancel(waiting);
      ids.clear();
    };
    entry = { ids, onAbort };
    signalWaits.set(signal, entry);
    signal.addEventListener('abort', onAbort, { once: true });
  }
  entry.ids.add(id);
  return id;
}

/** After the wait: frees the handle, and the listener once no wait uses it. */
function unwatchSignal(signal, id) {
  native.cancel(id); // a no-op when the native acquire already freed it
  const entry = signalWaits.get(signal);
  if (!entry) return;
  entry.ids.delete(id);
  if (entry.ids.size === 0) {
    signalWaits.delete(signal);
    signal.removeEventListener('abort', entry.onAbort);
  }
}

/**
 * Runs the native wait `start(cancelId)` under `signal` (none: not abortable): rejects
 * at once with an AbortError if the signal is already aborted, and with one when it
 * aborts meanwhile (the native wait is dropped, taking nothing). `what` is the
 * AbortError's message. Other native errors become FerrolockErrors.
 */
async function abortable(start, signal, what) {
  if (signal && signal.aborted) throw abortError(signal, what);
  const cancelId = signal ? watchSignal(signal) : undefined;
  try {
    return await start(cancelId);
  } catch (e) {
    const err = convert(e);
    if (err.code === 'ERR_CANCELLED' && signal && signal.aborted) throw abortError(signal, what);
    throw err;
  } finally {
    if (signal) unwatchSignal(signal, cancelId);
  }
}

module.exports = { abortError, watchSignal, unwatchSignal, abortable };
