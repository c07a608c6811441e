"""Holds that outlive their caller: the client keeps the lock objects that hold
alive (:class:`_HeldLocks`), and a thread or task that ends while it holds is
reported (:func:`_caller_ended`); the hold stays either way."""

from __future__ import annotations

import logging
import os
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

from . import _native

logger = logging.getLogger("ferrolock")
"""The logger every ferrolock message goes to."""


class _HeldLocks:
    """The lock objects of one client that hold, each with its holding native
    holders (one per thread or task, or the shared one of ``holder_id``). A
    multi-lock (:class:`ferrolock.RedLock`, ...) is kept by each of its members'
    clients, with its own native holders.

    The client keeps these objects alive while they hold, so that a hold never
    ends, nor loses its ``on_lost`` callback, because its lock object was
    garbage-collected or its thread or task ended (the core keeps the hold
    itself). :meth:`track` runs after every acquire and release, :meth:`settle`
    after a loss, :meth:`clear` when the client closes; the hold count is read
    under the mutex, so the last call after a change of a holder's count decides.
    """

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._locks: dict[object, _native.Holder | set[_native.Holder]] = {}
        """Lock object -> its holding holder, or a set of them when several threads
        or tasks hold through it (rarely: a set is most of a hold's Python memory)."""
        _ALL.add(self)

    def _after_fork(self) -> None:
        """In a forked child: the parent's holds are not the child's (the child's
        client holds nothing), and another thread may have held the mutex at fork."""
        self._mutex = threading.Lock()
        self._locks = {}

    def track(self, lock: object, holder: _native.Holder) -> None:
        """Keeps ``lock`` while ``holder`` holds; forgets it when no holder of it does."""
        with self._mutex:
            holders = self._locks.get(lock)
            if holder.local_hold_count() > 0:
                if holders is None:
                    self._locks[lock] = holder
                elif isinstance(holders, set):
                    holders.add(holder)
                elif holders is not holder:
                    self._locks[lock] = {holders, holder}
            elif holders is not None:
                self._forget_released(lock, holders)

    def settle(self, lock: object) -> None:
        """Forgets the holders of ``lock`` that hold no more (after a loss)."""
        with self._mutex:
            holders = self._locks.get(lock)
            if holders is not None:
                self._forget_released(lock, holders)

    def _forget_released(self, lock: object, holders: _native.Holder | set[_native.Holder]) -> None:
        if not isinstance(holders, set):
            if holders.local_hold_count() == 0:
                del self._locks[lock]
            return
        for holder in [h for h in holders if h.local_hold_count() == 0]:
            holders.discard(holder)
        if not holders:
            del self._locks[lock]

    def clear(self) -> None:
        """Forgets everything (the client closed: the core released or dropped every hold)."""
        with self._mutex:
            self._locks.clear()


_ALL: weakref.WeakSet[_HeldLocks] = weakref.WeakSet()
"""Every client's record, to reset in a forked child."""


def _forget_parent_holds() -> None:
    for held in list(_ALL):
        held._after_fork()


os.register_at_fork(after_in_child=_forget_parent_holds)


def _caller_ended(
    kind: str,
    caller: str,
    ref: weakref.ReferenceType[Any],
    holder: _native.Holder,
    pid: int,
    _getpid: Callable[[], int] = os.getpid,
    _finalizing: Callable[[], bool] = sys.is_finalizing,
) -> None:
    """A thread or task that used ``holder`` ended: warn if it still holds (the
    hold stays, kept by the client). Not when the lock object itself is being
    collected (with its client), in a forked child, or at interpreter exit (when
    this module's globals may be gone already: the defaults keep what it needs)."""
    if pid != _getpid() or _finalizing():
        return
    lock = ref()
    if lock is None:
        return
    count = holder.local_hold_count()
    if count > 0:
        logger.warning(
            '%s "%s" ended while holding lock "%s" (owner %s, %d level(s)); '
            "the hold stays until the client is closed or its lease ends",
            kind,
            caller,
            lock.name,
            holder.owner,
            count,
        )
