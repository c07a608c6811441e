"""ferrolock: distributed locks on Redis that speak Redisson's wire protocol.

A :class:`Lock` is a distributed :class:`threading.RLock`: re-entrant per
(lock object, thread), renewed by a watchdog while held, and woken through
pub/sub when it is released. Java services using Redisson's ``RLock`` /
``RFencedLock`` on the same names exclude and wake ours. The asyncio twin is
:mod:`ferrolock.aio`.

Quick start::

    import ferrolock

    with ferrolock.Client("redis://127.0.0.1:6379/0") as client:
        lock = client.lock("orders:42")
        with lock:                      # waits as long as it takes
            ...                         # critical section
        with lock.hold(timeout=5.0):    # LockTimeoutError after 5 s
            ...
        if lock.acquire(blocking=False):
            try:
                ...
            finally:
                lock.release()

A hold ends only when it is released (``release()`` or leaving a ``with``
block), when its explicit lease ends, or when the client is closed (or dropped
entirely, or the process exits): never because a lock object is
garbage-collected or because the thread that holds it ends. The client keeps
the lock objects that hold alive, so ``if client.lock("nightly").acquire(blocking=False): ...``
keeps the lock until :meth:`Client.close`, and their ``on_lost`` still fires.

Log records go to the ``logging`` logger ``"ferrolock"`` (lost locks, and
threads or tasks that end while holding, are reported there as warnings).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING

from . import _native
from ._errors import (
    ConnectionError,
    InvalidArgumentError,
    LockError,
    LockLostError,
    LockTimeoutError,
    NotOwnedError,
    PermissionDeniedError,
    WrongTypeError,
)

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "Client",
    "Lock",
    "LockError",
    "NotOwnedError",
    "LockLostError",
    "LockTimeoutError",
    "ConnectionError",
    "WrongTypeError",
    "InvalidArgumentError",
    "PermissionDeniedError",
    "OnLost",
    "logger",
]

__version__ = "0.1.0"

logger = logging.getLogger("ferrolock")
"""The logger every ferrolock message goes to."""

# Background threads may still be handing a result or a callback to Python when
# the program ends; let them leave the interpreter before it finalizes.
atexit.register(_native.quiesce, 2.0)


OnLost = Callable[["Lock"], object]
"""Type of an ``on_lost`` callback: called with the lock, from a background thread."""


def _wait_seconds(blocking: bool, timeout: float | None) -> float | None:
    """Translates threading's (blocking, timeout) into the core's wait bound."""
    if not blocking:
        if timeout is not None and timeout != -1:
            raise InvalidArgumentError("can't specify a timeout for a non-blocking acquire")
        return 0.0
    if timeout is None or timeout == -1:
        return None
    return float(timeout)


def _lost_dispatcher(ref: weakref.ReferenceType[_PerCallerHolders]) -> Callable[[str], None]:
    """The native on-lost hook: logs the loss, lets the client forget the lost
    hold (:class:`_HeldLocks`) and calls the lock's ``on_lost``.

    Holds the lock object only weakly, so a lock object is not kept alive by its
    own holders (while it holds, its client keeps it alive).
    """

    def dispatch(message: str) -> None:
        logger.warning("%s", message)
        lock = ref()
        if lock is None:
            return
        try:
            lock._settle()
            lock._notify_lost()
        except Exception:
            logger.exception("the on_lost callback of lock %r raised", lock.name)

    return dispatch


class _HeldLocks:
    """The lock objects of one client that hold, each with its holding native
    holders (one per thread or task, or the shared one of ``holder_id``).

    The client keeps these objects alive while they hold, so that a hold never
    ends, nor loses its ``on_lost`` callback, because its lock object was
    garbage-collected or its thread or task ended (the core keeps the hold
    itself). :meth:`track` runs after every acquire and release, :meth:`settle`
    after a loss, :meth:`clear` when the client closes; the hold count is read
    under the mutex, so the last call after a change of a holder's count decides.
    """

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._locks: dict[_PerCallerHolders, set[_native.Holder]] = {}

    def track(self, lock: _PerCallerHolders, holder: _native.Holder) -> None:
        """Keeps ``lock`` while ``holder`` holds; forgets it when no holder of it does."""
        with self._mutex:
            holders = self._locks.get(lock)
            if holder.local_hold_count() > 0:
                if holders is None:
                    self._locks[lock] = {holder}
                else:
                    holders.add(holder)
            elif holders is not None:
                holders.discard(holder)
                self._forget_released(lock, holders)

    def settle(self, lock: _PerCallerHolders) -> None:
        """Forgets the holders of ``lock`` that hold no more (after a loss)."""
        with self._mutex:
            holders = self._locks.get(lock)
            if holders is not None:
                self._forget_released(lock, holders)

    def _forget_released(self, lock: _PerCallerHolders, holders: set[_native.Holder]) -> None:
        for holder in [h for h in holders if h.local_hold_count() == 0]:
            holders.discard(holder)
        if not holders:
            del self._locks[lock]

    def clear(self) -> None:
        """Forgets everything (the client closed: the core released or dropped every hold)."""
        with self._mutex:
            self._locks.clear()


def _caller_ended(
    kind: str, caller: str, ref: weakref.ReferenceType[_PerCallerHolders], holder: _native.Holder, pid: int
) -> None:
    """A thread or task that used ``holder`` ended: warn if it still holds (the
    hold stays, kept by the client). Not when the lock object itself is being
    collected (with its client), in a forked child, or at interpreter exit."""
    if pid != os.getpid() or sys.is_finalizing():
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


class _ThreadSlot:
    """A thread's holder in a :class:`Lock`'s ``threading.local``. Its
    finalisation, when the thread ends, reports a hold the thread left behind."""

    __slots__ = ("holder", "_lock", "_thread", "_pid")

    def __init__(self, holder: _native.Holder, lock: weakref.ReferenceType[_PerCallerHolders]) -> None:
        self.holder = holder
        self._lock = lock
        self._thread = threading.current_thread().name
        self._pid = os.getpid()

    def __del__(self) -> None:
        _caller_ended("thread", self._thread, self._lock, self.holder, self._pid)


class Client:
    """A connection to one Redis deployment, shared by all locks made from it.

    ``url`` is ``redis://[user:password@]host[:port][/db]`` (``rediss://`` for
    TLS). Connecting checks that the server answers, so a wrong address or
    password raises :class:`ConnectionError` here. Durations are in seconds:
    ``watchdog_timeout`` is the lease of locks taken without an explicit lease
    (renewed every third of it while held). ``drift_factor`` (0 to 0.5, default
    0.01) allows for clock drift: a holder counts its hold as lost
    ``lease * drift_factor + 2 ms`` before Redis would expire it; out of range
    raises :class:`InvalidArgumentError`.

    Use it as a context manager, or call :meth:`close` when done: the client
    keeps every hold that is not released (even of a garbage-collected lock
    object or of a thread that ended) until then. A client made before
    ``os.fork()`` raises :class:`InvalidArgumentError` in the child: make a new
    client there.
    """

    def __init__(
        self,
        url: str,
        watchdog_timeout: float = 30.0,
        *,
        response_timeout: float = 2.0,
        connect_timeout: float = 2.0,
        retry_window: float = 5.0,
        drift_factor: float = 0.01,
    ) -> None:
        self._native = _native.Client.connect(
            url, watchdog_timeout, response_timeout, connect_timeout, retry_window, drift_factor=drift_factor
        )
        self._held = _HeldLocks()
        logger.debug("ferrolock client %s connected", self._native.id)

    @property
    def id(self) -> str:
        """This client's id (UUID v4), the first half of every owner field it writes."""
        return self._native.id

    @property
    def watchdog_timeout(self) -> float:
        """Lease of watchdog-renewed locks, in seconds."""
        return self._native.watchdog_timeout

    def lock(self, name: str, on_lost: OnLost | None = None, *, holder_id: int | None = None) -> Lock:
        """A re-entrant lock on ``name`` (1 to 4096 bytes).

        ``on_lost(lock)`` is called from a background thread when a hold of this
        lock object is lost. With ``holder_id``, every thread using this object
        acts as the one holder ``<client id>:<holder_id>`` (hand-over cases).
        """
        return Lock(self, name, fenced=False, on_lost=on_lost, holder_id=holder_id)

    def fenced_lock(self, name: str, on_lost: OnLost | None = None, *, holder_id: int | None = None) -> Lock:
        """Like :meth:`lock`, for a fenced lock: every acquisition gets a strictly
        increasing :attr:`Lock.token` (Redisson ``RFencedLock`` compatible)."""
        return Lock(self, name, fenced=True, on_lost=on_lost, holder_id=holder_id)

    def subscribed_channels(self) -> int:
        """Number of lock channels this client is subscribed to (waiting acquires)."""
        return self._native.subscribed_channels()

    def held_count(self) -> int:
        """Number of locks this client currently holds."""
        return self._native.held_count()

    def close(self) -> None:
        """Releases every lock this client still holds (including holds left by
        ended threads and dropped lock objects), stops the watchdog and closes the
        connections. Later calls raise :class:`LockError`."""
        try:
            self._native.close()
        finally:
            self._held.clear()
        logger.debug("ferrolock client %s closed", self._native.id)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<ferrolock.Client id={self.id}>"


class _PerCallerHolders:
    """Holder identity shared by :class:`Lock` and :class:`ferrolock.aio.Lock`:
    one native holder per caller (thread or task), created on first use, or one
    shared holder for every caller when an explicit ``holder_id`` is given.
    Subclasses say how a caller finds its holder (``_lookup``/``_remember``), and
    call :meth:`_track` after every acquire and release, so that the client keeps
    this object alive exactly while one of its holders holds."""

    def __init__(
        self, native: _native.Client, held: _HeldLocks, name: str, fenced: bool, holder_id: int | None
    ) -> None:
        self._native_client = native
        self._held = held
        self._fenced = fenced
        self._ref: weakref.ReferenceType[_PerCallerHolders] = weakref.ref(self)
        self._dispatch = _lost_dispatcher(self._ref)
        # Validates the name now; answers questions about the lock as a whole.
        self._probe = native.holder(name, fenced, holder_id)
        self._shared: _native.Holder | None = None
        if holder_id is not None:
            self._probe.set_on_lost(self._dispatch)
            self._shared = self._probe

    def _notify_lost(self) -> None:
        raise NotImplementedError

    def _track(self, holder: _native.Holder) -> None:
        """After an acquire or release through ``holder``: the client keeps this
        object alive while ``holder`` holds."""
        self._held.track(self, holder)

    def _settle(self) -> None:
        """After a loss: the client forgets the holders of this object that hold no more."""
        self._held.settle(self)

    def _lookup(self, strict: bool) -> _native.Holder | None:
        """The caller's holder, if any; ``strict`` raises when there is no caller identity."""
        raise NotImplementedError

    def _remember(self, holder: _native.Holder) -> None:
        raise NotImplementedError

    def _holder(self) -> _native.Holder:
        """The caller's holder, created on first use."""
        if self._shared is not None:
            return self._shared
        holder = self._lookup(strict=True)
        if holder is None:
            holder = self._native_client.holder(self._probe.name, self._fenced, None)
            holder.set_on_lost(self._dispatch)
            self._remember(holder)
        return holder

    def _current(self) -> _native.Holder | None:
        """The caller's holder if it has one (never creates it)."""
        if self._shared is not None:
            return self._shared
        return self._lookup(strict=False)

    @property
    def name(self) -> str:
        """The lock name."""
        return self._probe.name

    @property
    def fenced(self) -> bool:
        """True for fenced locks."""
        return self._fenced


class Lock(_PerCallerHolders):
    """A distributed re-entrant lock: a :class:`threading.RLock` across processes.

    The holder is (this object, the calling thread): a thread may re-enter and
    must release as often; other threads, and other lock objects for the same
    name (even in the same thread), exclude it. Made by :meth:`Client.lock` and
    :meth:`Client.fenced_lock`.

    A hold ends only by :meth:`release` (or leaving ``with``), the end of an
    explicit lease, or :meth:`Client.close`: dropping this object, or the end of
    the thread that holds, keeps the hold (the client keeps this object alive;
    a thread that ends while holding is logged as a warning).
    """

    def __init__(
        self,
        client: Client,
        name: str,
        *,
        fenced: bool = False,
        on_lost: OnLost | None = None,
        holder_id: int | None = None,
    ) -> None:
        self._client = client
        self._on_lost = on_lost
        self._local = threading.local()
        super().__init__(client._native, client._held, name, fenced, holder_id)

    def _notify_lost(self) -> None:
        if self._on_lost is not None:
            self._on_lost(self)

    def _lookup(self, strict: bool) -> _native.Holder | None:
        slot: _ThreadSlot | None = getattr(self._local, "slot", None)
        return None if slot is None else slot.holder

    def _remember(self, holder: _native.Holder) -> None:
        self._local.slot = _ThreadSlot(holder, self._ref)

    @property
    def client(self) -> Client:
        """The client this lock was made from."""
        return self._client

    def acquire(self, blocking: bool = True, timeout: float | None = -1, *, lease: float | None = None) -> bool:
        """Acquires the lock for the calling thread, with :class:`threading.RLock` semantics.

        ``timeout`` -1 or None waits as long as it takes; ``blocking=False`` tries
        once. Returns False if not acquired in time. ``lease`` (seconds) makes the
        lock expire after it with no renewal; None renews it with the watchdog
        while held. The GIL is released while waiting, and Ctrl-C interrupts the
        wait (leaving nothing held).
        """
        wait = _wait_seconds(blocking, timeout)
        holder = self._holder()
        try:
            return holder.acquire(wait, lease)
        finally:
            self._track(holder)

    def release(self) -> None:
        """Releases one level of the calling thread's hold.

        Raises :class:`NotOwnedError` if this thread does not hold the lock through
        this object, and :class:`LockLostError` if its hold was lost meanwhile.
        """
        holder = self._holder()
        try:
            holder.release()
        finally:
            self._track(holder)

    @contextlib.contextmanager
    def hold(self, timeout: float | None = None, lease: float | None = None) -> Iterator[Lock]:
        """Context manager that acquires (waiting at most ``timeout`` seconds, None =
        forever) or raises :class:`LockTimeoutError`, and releases on exit."""
        if not self.acquire(True, timeout, lease=lease):
            raise LockTimeoutError(f'lock "{self.name}" was not acquired within {timeout} s; it is held by another holder')
        try:
            yield self
        finally:
            self.release()

    def locked(self) -> bool:
        """True if anyone holds the lock (asks Redis). :class:`WrongTypeError` if
        the key at this name is not a lock."""
        return self._probe.is_locked()

    def owned(self) -> bool:
        """True if the calling thread holds the lock through this object (asks Redis)."""
        holder = self._current()
        return holder is not None and holder.is_held()

    def hold_count(self) -> int:
        """The calling thread's hold count through this object (asks Redis; 0 = not held)."""
        holder = self._current()
        return 0 if holder is None else holder.hold_count()

    def remaining_lease(self) -> float | None:
        """Seconds left on the lock's lease, whoever holds it; None when it is not
        locked, ``inf`` for a key without expiry."""
        return self._probe.remaining_lease()

    def force_unlock(self) -> bool:
        """Deletes the lock whoever holds it and wakes a waiter. True if it was
        locked. The holder finds its hold lost (``on_lost``, :attr:`lost`)."""
        return self._probe.force_unlock()

    @property
    def lost(self) -> bool:
        """True if the calling thread's current hold was lost (until it acquires again)."""
        holder = self._current()
        return holder is not None and holder.lost

    @property
    def token(self) -> int | None:
        """Fenced locks: the fencing token of the calling thread's current hold."""
        holder = self._current()
        return None if holder is None else holder.token

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        kind = "fenced lock" if self._fenced else "lock"
        return f"<ferrolock.Lock {kind} {self.name!r}>"
