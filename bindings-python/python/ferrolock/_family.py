"""The counters: what the blocking and asyncio semaphores, permit-expirable
semaphores and count-down latches share (the ``_*Base`` classes: the native
counter, argument checks). The blocking classes are in ``_client``, beside the
client that makes them; their asyncio twins in :mod:`ferrolock.aio`. The lock
kinds of the family (fair, read, write) are :class:`ferrolock.Lock` objects;
:class:`ReadWriteLock` pairs two of them."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from . import _native
from ._args import check_seconds
from ._errors import LockTimeoutError

if TYPE_CHECKING:
    from ._base import _ClientBase

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


# ---------------------------------------------------------------------------
# The count-down latch.


class _LatchBase(_CounterBase[_C, _native.Latch]):
    """What :class:`CountDownLatch` and its asyncio twin share."""

    def __init__(self, client: _C, name: str) -> None:
        """The count-down latch ``name`` of ``client``; use ``client.count_down_latch(name)``."""
        super().__init__(client, client._native.latch(name))

