'use strict';
// AbortSignal -> native cancel handles. One 'abort' listener per signal, however
// many waits share it (1000 acquires on one signal add one listener, not 1000).

const native = require('./native');
const { CancelledError } = require('./errors');

const signalWaits = new WeakMap(); // signal -> { ids: Set<cancelId>, onAbort }

/** The error of a wait that `signal` aborted. */
function abortError(signal) {
  return new CancelledError('the wait for the lock was aborted; nothing is held', { cause: signal.reason });
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

module.exports = { abortError, watchSignal, unwatchSignal };
