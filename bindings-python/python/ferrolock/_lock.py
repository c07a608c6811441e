"""Locks: what :class:`Lock` and its asyncio twin :class:`ferrolock.aio.Lock`
share (:class:`_LockBase`: holder identity, loss reporting, the properties), and
the blocking :class:`Lock`."""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from . import _native
from ._errors import InvalidArgumentError, LockTimeoutError
from ._holds import _caller_ended, logger

if TYPE_CHECKING:
    from typing_extensions import Self

    from ._client import Client, _ClientBase

_C = TypeVar("_C", bound="_ClientBase")

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


class _Losable(Protocol):
    """What a lost hold is reported to: a :class:`_LockBase` or a multi-lock."""

    @property
    def name(self) -> str: ...

    def _settle(self) -> None: ...

    def _notify_lost(self) -> None: ...


_L = TypeVar("_L", bound=_Losable)


def _lost_dispatcher(ref: weakref.ReferenceType[_L]) -> Callable[[str], None]:
    """The native on-lost hook: logs the loss, lets the client forget the lost
    hold (:class:`ferrolock._holds._HeldLocks`) and calls the lock's ``on_lost``.

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


class _LockBase(Generic[_C]):
    """What :class:`Lock` and :class:`ferrolock.aio.Lock` share.

    Holder identity: one native holder per caller (thread or task), created on
    first use, or one shared holder for every caller when an explicit
    ``holder_id`` is given. Subclasses say how a caller finds its holder
    (``_lookup``/``_remember``), and call :meth:`_track` after every acquire and
    release, so that the client keeps this object alive exactly while one of its
    holders holds."""

    _PUBLIC_NAME: ClassVar[str]
    """The class as the user knows it, for ``repr``."""

    def __init__(
        self,
        client: _C,
        name: str,
        *,
        kind: str = "reentrant",
        on_lost: Callable[[Self], object] | None = None,
        holder_id: int | None = None,
    ) -> None:
        """A lock object of ``client`` on ``name``, of the lock kind ``kind`` by
        name (``"reentrant"``, ``"fenced"``); made by ``client.lock(name)`` and
        ``client.fenced_lock(name)``, whose docs say what ``on_lost`` and
        ``holder_id`` do."""
        self._init_callers()
        self._client = client
        self._on_lost = on_lost
        self._native_client = client._native
        self._held = client._held
        self._ref: weakref.ReferenceType[_LockBase[_C]] = weakref.ref(self)
        self._dispatch = _lost_dispatcher(self._ref)
        # Validates the name and the kind now; answers questions about the lock as a whole.
        self._probe = self._native_client.holder(name, kind, holder_id)
        self._shared: _native.Holder | None = None
        if holder_id is not None:
            self._probe.set_on_lost(self._dispatch)
            self._shared = self._probe

    def _notify_lost(self: Self) -> None:
        if self._on_lost is not None:
            self._on_lost(self)

    def _track(self, holder: _native.Holder) -> None:
        """After an acquire or release through ``holder``: the client keeps this
        object alive while ``holder`` holds."""
        self._held.track(self, holder)

    def _settle(self) -> None:
        """After a loss: the client forgets the holders of this object that hold no more."""
        self._held.settle(self)

    def _init_callers(self) -> None:
        """Makes the (empty) map from callers to their holders."""
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
            holder = self._native_client.holder(self._probe.name, self._probe.kind, None)
            holder.set_on_lost(self._dispatch)
            self._remember(holder)
        return holder

    def _current(self) -> _native.Holder | None:
        """The caller's holder if it has one (never creates it)."""
        if self._shared is not None:
            return self._shared
        return self._lookup(strict=False)

    def _timed_out(self, timeout: float | None) -> LockTimeoutError:
        """The error of a ``hold(timeout)`` that did not acquire in time."""
        return LockTimeoutError(f'lock "{self.name}" was not acquired within {timeout} s; it is held by another holder')

    @property
    def client(self) -> _C:
        """The client this lock was made from."""
        return self._client

    @property
    def name(self) -> str:
        """The lock name."""
        return self._probe.name

    @property
    def kind(self) -> str:
        """The lock's kind by name: ``"reentrant"``, or ``"fenced"`` for a fenced lock."""
        return self._probe.kind

    @property
    def fenced(self) -> bool:
        """True for fenced locks."""
        return self._probe.fenced

    @property
    def lost(self) -> bool:
        """True if the caller's (thread's or task's) current hold was lost (until it
        acquires again)."""
        holder = self._current()
        return holder is not None and holder.lost

    @property
    def token(self) -> int | None:
        """Fenced locks: the fencing token of the caller's (thread's or task's) current hold."""
        holder = self._current()
        return None if holder is None else holder.token

    def __repr__(self) -> str:
        kind = "fenced lock" if self.fenced else "lock"
        return f"<{self._PUBLIC_NAME} {kind} {self.name!r}>"


class _ThreadSlot:
    """A thread's holder in a :class:`Lock`'s ``threading.local``. Its
    finalisation, when the thread ends, reports a hold the thread left behind."""

    __slots__ = ("holder", "_lock", "_thread", "_pid")

    def __init__(self, holder: _native.Holder, lock: weakref.ReferenceType[Any]) -> None:
        self.holder = holder
        self._lock = lock
        self._thread = threading.current_thread().name
        self._pid = os.getpid()

    def __del__(self) -> None:
        _caller_ended("thread", self._thread, self._lock, self.holder, self._pid)


class Lock(_LockBase["Client"]):
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

    _PUBLIC_NAME = "ferrolock.Lock"

    def _init_callers(self) -> None:
        self._local = threading.local()

    def _lookup(self, strict: bool) -> _native.Holder | None:
        slot: _ThreadSlot | None = getattr(self._local, "slot", None)
        return None if slot is None else slot.holder

    def _remember(self, holder: _native.Holder) -> None:
        self._local.slot = _ThreadSlot(holder, self._ref)

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
            raise self._timed_out(timeout)
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
