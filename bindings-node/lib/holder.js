'use strict';
// A lock's holder as status(), client.inspect(), lock.lastHolder() and a
// NotAcquiredError's `holder` give it: the owner field, its count and its note
// (core parses the note and describes the holder; this only fills in the nulls).

/**
 * `{ owner, count, info, app, host, pid, thread, command, renewed, since,
 * heldForMs, description }` from the addon's HolderStatus.
 */
function holder(h) {
  return {
    owner: h.owner,
    count: h.count,
    info: h.info ?? null,
    app: h.app ?? null,
    host: h.host ?? null,
    pid: h.pid ?? null,
    thread: h.thread ?? null,
    command: h.command ?? null,
    renewed: h.renewed ?? null,
    since: h.since ?? null,
    heldForMs: h.heldForMs ?? null,
    description: h.description,
  };
}

module.exports = { holder };
