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

Log records go to the ``logging`` logger ``"ferrolock"`` (lost locks are
reported there as warnings).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
import weakref
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

from . import _native
from ._errors import (
    ConnectionError,
    InvalidArgumentError,
    LockError,
    LockLostError,
    LockTimeoutError,
    NotOwnedError,
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
    "OnLost",
    "logger",
]

__version__ = "0.1.0"

logger = logging.getLogger("ferrolock")
"""The logger every ferrolock message goes to."""

# Background threads may still be handing a result or a callback to Python when
# the program ends; let them leave the interpreter before it finalizes.
atexit.register(_native.quiesce, 2.0)


class _Notifiable(Protocol):
    """What the lost-lock dispatcher needs from a lock object (sync or asyncio)."""

    @property
    def name(self) -> str: ...

    def _notify_lost(self) -> None: ...


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


def _lost_dispatcher(ref: weakref.ReferenceType[_Notifiable]) -> Callable[[str], None]:
    """The native on-lost hook: logs the loss and calls the lock's ``on_lost``.

    Holds the lock object only weakly, so a lock object is not kept alive by its
    own holders.
    """

    def dispatch(message: str) -> None:
        logger.warning("%s", message)
        lock = ref()
        if lock is None:
            return
        try:
            lock._notify_lost()
        except Exception:
            logger.exception("the on_lost callback of lock %r raised", lock.name)

    return dispatch


class Client:
    """A connection to one Redis deployment, shared by all locks made from it.

    ``url`` is ``redis://[user:password@]host[:port][/db]`` (``rediss://`` for
    TLS). Connecting checks that the server answers, so a wrong address or
    password raises :class:`ConnectionError` here. Durations are in seconds:
    ``watchdog_timeout`` is the lease of locks taken without an explicit lease
    (renewed every third of it while held).

    Use it as a context manager, or call :meth:`close` when done. A client made
    before ``os.fork()`` raises :class:`InvalidArgumentError` in the child: make
    a new client there.
    """

    def __init__(
        self,
        url: str,
        watchdog_timeout: float = 30.0,
        *,
        response_timeout: float = 2.0,
        connect_timeout: float = 2.0,
        retry_window: float = 5.0,
    ) -> None:
        self._native = _native.Client.connect(
            url, watchdog_timeout, response_timeout, connect_timeout, retry_window
        )
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
        """Releases every lock this client still holds, stops the watchdog and
        closes the connections. Later calls raise :class:`LockError`."""
        self._native.close()
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
    Subclasses say how a caller finds its holder (``_lookup``/``_remember``)."""

    def __init__(self, native: _native.Client, name: str, fenced: bool, holder_id: int | None) -> None:
        self._native_client = native
        self._fenced = fenced
        self._dispatch = _lost_dispatcher(weakref.ref(self))
        # Validates the name now; answers questions about the lock as a whole.
        self._probe = native.holder(name, fenced, holder_id)
        self._shared: _native.Holder | None = None
        if holder_id is not None:
            self._probe.set_on_lost(self._dispatch)
            self._shared = self._probe

    def _notify_lost(self) -> None:
        raise NotImplementedError

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
        super().__init__(client._native, name, fenced, holder_id)

    def _notify_lost(self) -> None:
        if self._on_lost is not None:
            self._on_lost(self)

    def _lookup(self, strict: bool) -> _native.Holder | None:
        holder: _native.Holder | None = getattr(self._local, "holder", None)
        return holder

    def _remember(self, holder: _native.Holder) -> None:
        self._local.holder = holder

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
        return self._holder().acquire(wait, lease)

    def release(self) -> None:
        """Releases one level of the calling thread's hold.

        Raises :class:`NotOwnedError` if this thread does not hold the lock through
        this object, and :class:`LockLostError` if its hold was lost meanwhile.
        """
        self._holder().release()

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
