"""The counters: what the blocking and asyncio semaphores, permit-expirable
semaphores and count-down latches share (the ``_*Base`` classes: the native
counter, argument checks), and the blocking classes. Their asyncio twins are in
:mod:`ferrolock.aio`. The lock kinds of the family (fair, read, write) are
:class:`ferrolock.Lock` objects (``_lock.py``); :class:`ReadWriteLock` pairs two
of them here."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from . import _native
from ._args import check_count, check_seconds
from ._errors import LockTimeoutError
from ._lock import Lock, _wait_seconds
from ._scope import _Scoped

if TYPE_CHECKING:
    from ._client import Client, _ClientBase

_C = TypeVar("_C", bound="_ClientBase")
_L = TypeVar("_L")
_N = TypeVar("_N", _native.Semaphore, _native.PermitSemaphore, _native.Latch)


# ---------------------------------------------------------------------------
# The read-write lock: two lock objects whose callers share one holder id.


class _ThreadIds:
    """One holder id per thread, shared by both sides of a read-write lock, so
    that a thread's write hold and read holds are one holder's (Redisson lets a
    writer take read holds, and keep them after it stops writing)."""

    def __init__(self, native: _native.Client) -> None:
        self._native = native
        self._local = threading.local()

    def caller_id(self) -> int:
        """The calling thread's holder id, made on first use."""
        holder_id: int | None = getattr(self._local, "id", None)
        if holder_id is None:
            holder_id = self._local.id = self._native.new_holder_id()
        return holder_id


class _ReadWriteLockBase(Generic[_C, _L]):
    """What :class:`ReadWriteLock` and :class:`ferrolock.aio.ReadWriteLock` share:
    the two sides, lock objects of kinds ``"read"`` and ``"write"``."""

    _PUBLIC_NAME: str

    def __init__(self, read: _L, write: _L, name: str, client: _C) -> None:
        self._read = read
        self._write = write
        self._name = name
        self._client = client

    @property
    def name(self) -> str:
        """The lock name."""
        return self._name

    @property
    def client(self) -> _C:
        """The client this lock was made from."""
        return self._client

    def read_lock(self) -> _L:
        """The read side: held by many holders at once, never while another holder
        writes. The same object at every call."""
        return self._read

    def write_lock(self) -> _L:
        """The write side: held by one holder alone (its own read holds aside). The
        same object at every call."""
        return self._write

    def __repr__(self) -> str:
        return f"<{self._PUBLIC_NAME} {self._name!r}>"


class ReadWriteLock(_ReadWriteLockBase["Client", Lock]):
    """Redisson's ``RReadWriteLock``: many readers or one writer. Made by
    :meth:`Client.read_write_lock`.

    Both sides are :class:`Lock` objects (acquire, release, ``with``, ``hold``,
    ``status``, lost signals, ...), re-entrant per (this read-write lock, thread):
    a thread's read and write holds are one holder's, so a writer may also take
    read holds (and keep them after releasing the write side: a downgrade); a
    reader asking for the write side waits until every read hold, its own
    included, is gone (no upgrade, as in Redisson)."""

    _PUBLIC_NAME = "ferrolock.ReadWriteLock"


# ---------------------------------------------------------------------------
# The counters' base.


class _CounterBase(Generic[_C, _N]):
    """What every counter class shares (both semaphores and the latch, blocking
    and asyncio): the client it was made from, its native object, its name."""

    _PUBLIC_NAME: str

    def __init__(self, client: _C, native: _N) -> None:
        self._client = client
        self._native: _N = native

    @property
    def name(self) -> str:
        """Its name."""
        return self._native.name

    @property
    def client(self) -> _C:
        """The client it was made from."""
        return self._client

    def __repr__(self) -> str:
        return f"<{self._PUBLIC_NAME} {self.name!r}>"


# ---------------------------------------------------------------------------
# Semaphores.


class _SemaphoreBase(_CounterBase[_C, _native.Semaphore]):
    """What :class:`Semaphore` and :class:`ferrolock.aio.Semaphore` share."""

    def __init__(self, client: _C, name: str) -> None:
        """The semaphore ``name`` of ``client``; use ``client.semaphore(name)``."""
        super().__init__(client, client._native.semaphore(name))

    def _timed_out(self, permits: int, timeout: float | None) -> LockTimeoutError:
        return LockTimeoutError(f'semaphore "{self.name}": {permits} permit(s) were not free within {timeout} s')


class Semaphore(_SemaphoreBase["Client"], _Scoped):
    """Redisson's ``RSemaphore``, like :class:`threading.Semaphore` across
    processes: a count of free permits, taken and given back by anyone (permits
    are nobody's: a process that ends holding permits does not give them back,
    and closing the client does not either). Made by :meth:`Client.semaphore`.

    ``with sem:`` takes one permit (waiting as long as it takes) and gives it back
    on exit. A semaphore that does not exist has no permits: give it some with
    :meth:`try_set_permits` (or :meth:`release`)."""

    _PUBLIC_NAME = "ferrolock.Semaphore"

    def try_set_permits(self, permits: int) -> bool:
        """Gives the semaphore ``permits`` free permits if it does not exist yet;
        False if it exists (its count is left alone)."""
        return self._native.try_set_permits(check_count(permits, "permits"))

    def acquire(self, blocking: bool = True, timeout: float | None = None, *, permits: int = 1) -> bool:
        """Takes ``permits`` free permits (all at once), with
        :class:`threading.Semaphore` semantics: ``timeout`` None (or -1) waits as
        long as it takes, ``blocking=False`` tries once. False if they were not
        free in time. Woken by releases (no polling); the GIL is released while
        waiting and Ctrl-C interrupts the wait, taking nothing.
        :class:`InvalidArgumentError` for 0 permits."""
        count = check_count(permits, "permits")
        return self._native.acquire(count, _wait_seconds(blocking, timeout))

    def release(self, permits: int = 1) -> int:
        """Gives ``permits`` back (anyone may, taken or not) and wakes as many
        waiters; returns the free permits right after."""
        return self._native.release(check_count(permits, "permits"))

    def available(self) -> int:
        """The free permits now (0 for a semaphore that does not exist).
        :class:`WrongTypeError` if the key at this name is not a semaphore."""
        return self._native.available()

    def drain(self) -> int:
        """Takes every free permit; returns how many."""
        return self._native.drain()

    @contextlib.contextmanager
    def hold(self, timeout: float | None = None, *, permits: int = 1) -> Iterator[Semaphore]:
        """Context manager that takes ``permits`` (waiting at most ``timeout``
        seconds, None = as long as it takes) or raises :class:`LockTimeoutError`,
        and gives them back on exit."""
        if not self.acquire(True, timeout, permits=permits):
            raise self._timed_out(permits, timeout)
        try:
            yield self
        finally:
            self.release(permits)

    def _enter(self) -> None:
        self.acquire()

    def _exit(self) -> None:
        self.release()


@dataclass(frozen=True)
class Permit:
    """A permit of a permit-expirable semaphore (``ps.acquire()``): give it back
    with ``ps.release(permit)`` (or ``ps.release(permit.id)``, from anywhere)."""

    id: str
    """The permit's id: 32 hex digits, as Redisson shows its ids."""
    name: str
    """The semaphore's name."""
    lease: float | None = None
    """The lease it was taken with, in seconds (None: it stays out until released)."""


def _permit_id(permit: object) -> str:
    if isinstance(permit, Permit):
        return permit.id
    if isinstance(permit, str):
        return permit
    raise TypeError(f"permit must be a ferrolock.Permit or its id (str), not {type(permit).__name__}")


class _PermitSemaphoreBase(_CounterBase[_C, _native.PermitSemaphore]):
    """What :class:`PermitExpirableSemaphore` and its asyncio twin share."""

    def __init__(self, client: _C, name: str) -> None:
        """The permit-expirable semaphore ``name`` of ``client``; use
        ``client.permit_expirable_semaphore(name)``."""
        super().__init__(client, client._native.permit_semaphore(name))

    @staticmethod
    def _check_acquire(timeout: float | None, lease: float | None) -> None:
        check_seconds(timeout, "timeout", warn_long=True)
        check_seconds(lease, "lease", warn_long=True)

    def _permit(self, permit_id: str | None, lease: float | None) -> Permit | None:
        return None if permit_id is None else Permit(permit_id, self.name, None if lease is None else float(lease))

    def _timed_out(self, timeout: float | None) -> LockTimeoutError:
        return LockTimeoutError(f'permit-expirable semaphore "{self.name}": no permit was free within {timeout} s')


class PermitExpirableSemaphore(_PermitSemaphoreBase["Client"]):
    """Redisson's ``RPermitExpirableSemaphore``: permits with ids, each out until
    released by its id (by anyone) or until its optional lease ends, when it comes
    back by itself. Made by :meth:`Client.permit_expirable_semaphore`."""

    _PUBLIC_NAME = "ferrolock.PermitExpirableSemaphore"

    def try_set_permits(self, permits: int) -> bool:
        """Gives the semaphore ``permits`` free permits if it does not exist yet;
        False if it exists (its count is left alone)."""
        return self._native.try_set_permits(check_count(permits, "permits"))

    def acquire(self, timeout: float | None = None, *, lease: float | None = None) -> Permit | None:
        """Takes a permit, waiting at most ``timeout`` seconds (None: as long as it
        takes, 0: try once); None if none was free in time. With ``lease``
        (seconds), the permit comes back by itself after that. Woken by releases
        and by the nearest expiry (no polling); Ctrl-C interrupts the wait, taking
        nothing."""
        self._check_acquire(timeout, lease)
        return self._permit(self._native.acquire(None if timeout is None else float(timeout), lease), lease)

    def release(self, permit: Permit | str) -> bool:
        """Gives back ``permit`` (a :class:`Permit` or its id): True if it was out
        and in time, False if its lease had ended (it came back anyway) or it was
        released already. :class:`InvalidArgumentError` for an id that is not 32
        hex digits."""
        return self._native.release(_permit_id(permit))

    def available(self) -> int:
        """The free permits now, after taking back the expired ones."""
        return self._native.available()

    @contextlib.contextmanager
    def hold(self, timeout: float | None = None, *, lease: float | None = None) -> Iterator[Permit]:
        """Context manager that takes a permit (waiting at most ``timeout`` seconds)
        or raises :class:`LockTimeoutError`, gives it, and releases it on exit."""
        permit = self.acquire(timeout, lease=lease)
        if permit is None:
            raise self._timed_out(timeout)
        try:
            yield permit
        finally:
            self.release(permit)


# ---------------------------------------------------------------------------
# The count-down latch.


class _LatchBase(_CounterBase[_C, _native.Latch]):
    """What :class:`CountDownLatch` and its asyncio twin share."""

    def __init__(self, client: _C, name: str) -> None:
        """The count-down latch ``name`` of ``client``; use ``client.count_down_latch(name)``."""
        super().__init__(client, client._native.latch(name))


class CountDownLatch(_LatchBase["Client"]):
    """Redisson's ``RCountDownLatch``: a count set once, counted down by anyone;
    at 0 it opens and every waiter wakes at once. A latch that does not exist is
    open. Made by :meth:`Client.count_down_latch`."""

    _PUBLIC_NAME = "ferrolock.CountDownLatch"

    def try_set_count(self, count: int) -> bool:
        """Sets the count (1 or more) of a latch that is open; False if it is still
        counting down (its count is left alone)."""
        return self._native.try_set_count(check_count(count, "count"))

    def count_down(self) -> int:
        """Counts down by one; returns the count left (at 0 the latch opens)."""
        return self._native.count_down()

    def count(self) -> int:
        """The count now (0: open). :class:`WrongTypeError` if the key at this name
        is not a latch."""
        return self._native.count()

    def wait(self, timeout: float | None = None) -> bool:
        """Waits until the latch is open, at most ``timeout`` seconds (None: as long
        as it takes); True once open, False at the deadline. Woken by the opening
        message (no polling); Ctrl-C interrupts it."""
        check_seconds(timeout, "timeout", warn_long=True)
        return self._native.wait(None if timeout is None else float(timeout))

