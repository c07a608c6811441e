"""The asyncio API of ferrolock: the same locks, awaited instead of blocking.

The holder is (lock object, asyncio task): a task may re-enter and must release
as often; other tasks and other lock objects for the same name exclude it.
Cancelling a task that awaits :meth:`Lock.acquire` leaves nothing held and no
subscription behind. As in :mod:`ferrolock`, a hold ends only by a release (or
leaving ``async with``), the end of an explicit lease, or the client's
:meth:`Client.close`: a task that ends while holding keeps the hold (logged as a
warning), and a lock object that holds is kept alive by its client.

Quick start::

    import ferrolock.aio

    async def main() -> None:
        async with await ferrolock.aio.Client.connect("redis://127.0.0.1:6379/0") as client:
            lock = client.lock("orders:42")
            async with lock:
                ...
            async with lock.hold(timeout=5.0):   # LockTimeoutError after 5 s
                ...

:class:`RedLock` and :class:`MultiLock` are the asyncio twins of
:class:`ferrolock.RedLock` and :class:`ferrolock.MultiLock`, over locks of this
module (one client per server)::

        redlock = await ferrolock.aio.RedLock.connect(["redis://a", "redis://b", "redis://c"], "jobs")
        async with redlock:
            ...
        await redlock.close()

The rest of the family as in :mod:`ferrolock`, every wait awaited and
cancellation-safe (a cancelled wait takes nothing): ``client.fair_lock(name)``,
``client.read_write_lock(name).read_lock()`` / ``.write_lock()`` (:class:`Lock`
objects, holder (read-write lock, task)), ``client.semaphore(name)``
(``async with sem``), ``client.permit_expirable_semaphore(name)`` and
``client.count_down_latch(name)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable, Sequence
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, overload

from . import _errors, _lock, _native
from ._args import check_seconds
from ._base import _ClientBase
from ._client import Synchronized, _check_hold_options, _connect_options
from ._election import AsyncObserver as Observer, Leader, Leadership, _ElectionBase, _leader
from ._errors import *  # every exception class: _errors.__all__
from ._holds import _caller_ended, logger
from ._args import check_count
from ._family import (
    Permit,
    _LatchBase,
    _permit_id,
    _PermitSemaphoreBase,
    _ReadWriteLockBase,
    _SemaphoreBase,
)
from ._lock import LostEvent, OnLostCallback, _CallerSlots, _Holdable, _LockBase, _LockRef, _Slot, _wait_seconds
from ._multi import _MultiLockBase, _urls
from ._scope import _AsyncScoped
from ._status import Inspection, LockStatus

_P = ParamSpec("_P")
_R = TypeVar("_R")
_T = TypeVar("_T")

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "Client",
    "CountDownLatch",
    "Election",
    "Leader",
    "Leadership",
    "Lock",
    "LostEvent",
    "MultiLock",
    "Observer",
    "OnLost",
    "Permit",
    "PermitExpirableSemaphore",
    "ReadWriteLock",
    "RedLock",
    "Semaphore",
]
__all__ += _errors.__all__

OnLost = OnLostCallback["Lock"]
"""Type of an ``on_lost`` callback: ``on_lost(lock, reason)`` or ``on_lost(lock)``,
called from a background thread (use ``loop.call_soon_threadsafe`` to get back to
the event loop, or await :meth:`Lock.wait_lost` instead)."""


class Client(_ClientBase, _AsyncScoped):
    """A connection to one Redis deployment for asyncio code. Make it with
    ``await Client.connect(url)``; use it with ``async with`` or ``await client.close()``."""

    _PUBLIC_NAME = "ferrolock.aio.Client"

    @classmethod
    async def connect(
        cls,
        url: str,
        watchdog_timeout: float = 30.0,
        *,
        response_timeout: float = 2.0,
        connect_timeout: float = 2.0,
        retry_window: float = 5.0,
        drift_factor: float = 0.01,
        sentinel_username: str | None = None,
        sentinel_password: str | None = None,
        replica_ack: bool | str = "one",
        replica_ack_timeout: float = 1.0,
        app_name: str | None = None,
        holder_notes: str = "long",
        holder_note_after: float = 1.0,
        slow_wait_log: float | None = 10.0,
        replica_ack_aof: bool = False,
    ) -> Client:
        """Connects and checks that the server answers. See :class:`ferrolock.Client`
        for the URL forms (``redis://``, ``redis+sentinel://``, ``redis+cluster://``)
        and the settings: ``drift_factor`` out of 0 to 0.5 or ``replica_ack_timeout``
        out of 1 ms to 600 s raises :class:`InvalidArgumentError`; behind Sentinel
        or on a Cluster, an acquire too few replicas acknowledged in time for the
        ``replica_ack`` policy (``replica_ack_aof``: fsynced) raises
        :class:`NotReplicatedError`. ``holder_notes``, ``holder_note_after`` and
        ``slow_wait_log`` as there (a holder's note names the asyncio task that
        acquired)."""
        native = await _native.Client.connect_async(**_connect_options(locals()))
        return cls(native)

    def lock(self, name: str, on_lost: OnLost | None = None, *, holder_id: int | None = None) -> Lock:
        """A re-entrant lock on ``name``; holders are (this object, asyncio task).

        ``on_lost(lock, reason)`` (or ``on_lost(lock)``) is called from a background
        thread when a hold is lost (or await :meth:`Lock.wait_lost` in the task).
        With ``holder_id``, every task using this object acts as one holder.
        """
        return Lock(self, name, kind="reentrant", on_lost=on_lost, holder_id=holder_id)

    def fenced_lock(self, name: str, on_lost: OnLost | None = None, *, holder_id: int | None = None) -> Lock:
        """Like :meth:`lock`, for a fenced lock with strictly increasing tokens."""
        return Lock(self, name, kind="fenced", on_lost=on_lost, holder_id=holder_id)

    def fair_lock(self, name: str, on_lost: OnLost | None = None, *, holder_id: int | None = None) -> Lock:
        """Like :meth:`lock`, for a fair lock: granted in the order of arrival,
        across clients and processes (see :meth:`ferrolock.Client.fair_lock`)."""
        return Lock(self, name, kind="fair", on_lost=on_lost, holder_id=holder_id)

    def read_write_lock(
        self, name: str, on_lost: OnLost | None = None, *, holder_id: int | None = None
    ) -> ReadWriteLock:
        """A read-write lock on ``name``: many readers or one writer. Its sides are
        :class:`Lock` objects whose holder is (this read-write lock, task) on both
        sides (see :meth:`ferrolock.Client.read_write_lock`)."""
        ids = None if holder_id is not None else _TaskIds(self._native)
        read = Lock(self, name, kind="read", on_lost=on_lost, holder_id=holder_id, caller_ids=ids)
        write = Lock(self, name, kind="write", on_lost=on_lost, holder_id=holder_id, caller_ids=ids)
        return ReadWriteLock(read, write, name, self)

    def semaphore(self, name: str) -> Semaphore:
        """The semaphore ``name``: permits that are nobody's (see :class:`ferrolock.Semaphore`)."""
        return Semaphore(self, name)

    def permit_expirable_semaphore(self, name: str) -> PermitExpirableSemaphore:
        """The permit-expirable semaphore ``name``: permits with ids and optional leases."""
        return PermitExpirableSemaphore(self, name)

    def count_down_latch(self, name: str) -> CountDownLatch:
        """The count-down latch ``name``."""
        return CountDownLatch(self, name)

    def synchronized(
        self,
        name: str,
        *,
        timeout: float | None = None,
        lease: float | None = None,
        fenced: bool = False,
        min_hold: float | None = None,
    ) -> Callable[[Callable[_P, Awaitable[_R]]], Synchronized[_P, Coroutine[Any, Any, _R], Lock]]:
        """A decorator for ``async def`` functions: each call runs while its task
        holds lock ``name`` (see :meth:`ferrolock.Client.synchronized`)::

            @client.synchronized("reports:nightly", timeout=5.0)
            async def nightly() -> None: ...

        Not acquired within ``timeout`` seconds (None: as long as it takes):
        :class:`LockTimeoutError`, and the function does not run. Cancelling the
        call while it waits leaves nothing held. ``min_hold`` keeps the lock at least
        that long after the acquire (cron on several hosts, as there). A plain
        function raises TypeError.
        """
        _check_hold_options(timeout, lease)
        check_seconds(min_hold, "min_hold", warn_long=True)
        lock = self.fenced_lock(name) if fenced else self.lock(name)

        def decorate(fn: Callable[_P, Awaitable[_R]]) -> Synchronized[_P, Coroutine[Any, Any, _R], Lock]:
            if not inspect.iscoroutinefunction(fn):
                raise TypeError(
                    f"{getattr(fn, '__qualname__', fn)!s} is not an async function: "
                    "use ferrolock.Client.synchronized for it"
                )

            @functools.wraps(fn)
            async def synchronized(*args: _P.args, **kwargs: _P.kwargs) -> _R:
                async with lock.hold(timeout=timeout, lease=lease, min_hold=min_hold):
                    return await fn(*args, **kwargs)

            synchronized.lock = lock  # type: ignore[attr-defined]
            wrapped: Synchronized[_P, Coroutine[Any, Any, _R], Lock] = synchronized  # type: ignore[assignment]
            return wrapped

        return decorate

    def election(self, name: str, on_lost: Callable[..., object] | None = None, *, label: str | None = None) -> Election:
        """A new candidate in the leader election ``name`` (:class:`Election`; see
        :meth:`ferrolock.Client.election`)."""
        return Election(self, name, on_lost, label)

    async def inspect(self, name: str, kind: str | None = None) -> Inspection:
        """:meth:`ferrolock.Client.inspect`, awaited."""
        return Inspection._from_native(await self._native.inspect_async(name, kind))

    async def scan(self, prefix: str = "") -> list[str]:
        """:meth:`ferrolock.Client.scan`, awaited."""
        return await self._native.scan_async(prefix)

    async def close(self) -> None:
        """Releases every lock this client still holds (including holds left by
        ended tasks and dropped lock objects) and closes the connections. Later
        calls raise :class:`ClientClosedError`; closing again does nothing."""
        try:
            await self._native.close_async()
        finally:
            self._held.clear()

    async def _aexit(self) -> None:
        await self.close()


class _TaskSlot(_Slot):
    """A task's slot in an asyncio lock object, kept in the task's table
    (:data:`_TASKS`), and the done-callback that reports the task's end while it
    holds through it (registered only while it holds, so a long-lived task using
    many lock objects does not pile callbacks up)."""

    __slots__ = ("watch",)

    def __init__(self, holder: _native.Holder, members: Sequence[_native.Holder], lock: _LockRef) -> None:
        super().__init__(holder, members, lock)
        self.watch: _TaskEnded | None = None


class _TaskEnded:
    """The done-callback of a task that holds: reports its end (a small object
    rather than a closure: one per held lock)."""

    __slots__ = ("lock", "holder", "pid")

    def __init__(self, lock: weakref.ReferenceType[Any], holder: _native.Holder, pid: int) -> None:
        self.lock = lock
        self.holder = holder
        self.pid = pid

    def __call__(self, task: asyncio.Task[object]) -> None:
        _caller_ended("task", task.get_name(), self.lock, self.holder, self.pid)


_TASKS: weakref.WeakKeyDictionary[asyncio.Task[object], _CallerSlots] = weakref.WeakKeyDictionary()
"""Each task's :class:`ferrolock._lock._CallerSlots`, made on its first acquire."""


def _current_task() -> asyncio.Task[object]:
    task = asyncio.current_task()
    if task is None:
        raise LockError("ferrolock.aio locks are held by asyncio tasks; call this from inside a task")
    return task


class _TaskHeld(_Holdable, _AsyncScoped):
    """What the asyncio lock objects (:class:`Lock`, :class:`RedLock`,
    :class:`MultiLock`) share: a slot per task, and acquire (cancellable),
    release, :meth:`hold` and ``async with``."""

    def _init_callers(self) -> None:
        pass  # the tasks keep the slots (_TASKS)

    def _lookup(self, strict: bool) -> _Slot | None:
        task = _current_task() if strict else asyncio.current_task()
        return None if task is None else self._slot_of(task)

    def _slot_of(self, task: asyncio.Task[object]) -> _TaskSlot | None:
        table = _TASKS.get(task)
        slot = None if table is None else table.get(self._ref)
        return slot if isinstance(slot, _TaskSlot) else None

    def _remember(self, holder: _native.Holder, members: Sequence[_native.Holder]) -> _Slot:
        slot = _TaskSlot(holder, members, self._ref)
        task = _current_task()
        table = _TASKS.get(task)
        if table is None:
            table = _TASKS[task] = _CallerSlots()
        table[self._ref] = slot
        self._ref.add_table(table.ref)
        return slot

    def _watch_task(self) -> None:
        """After an acquire or release in the current task: while the task holds
        through this object, its end is reported (the hold stays)."""
        task = asyncio.current_task()
        slot = None if task is None else self._slot_of(task)
        if task is None or slot is None:
            return  # a shared holder (holder_id) belongs to no task
        holder = slot.holder
        holds = holder.local_hold_count() > 0
        if holds and slot.watch is None:
            slot.watch = _TaskEnded(self._ref, holder, _lock._PID)
            task.add_done_callback(slot.watch)
        elif not holds and slot.watch is not None:
            task.remove_done_callback(slot.watch)
            slot.watch = None

    async def _acquire(self, blocking: bool, timeout: float | None, lease: float | None) -> bool:
        wait = _wait_seconds(blocking, timeout)
        check_seconds(lease, "lease", warn_long=True)
        slot = self._slot()
        task = asyncio.current_task()
        label = None if task is None else task.get_name()
        if label is not None and label != slot.label:
            self._set_label(slot, label)
        new_hold = self._before_acquire(slot)
        future = slot.holder.acquire_async(wait, lease)
        try:
            acquired = await future
        except asyncio.CancelledError:
            # The task may be cancelled after the acquisition completed but before
            # it saw the result: give that acquisition back before leaving.
            if future.done() and not future.cancelled() and future.exception() is None and future.result():
                try:
                    await self._give_back(slot)
                except LockError:
                    logger.exception("releasing %s %r after a cancelled acquire failed", self._PUBLIC_NAME, self.name)
            raise
        finally:
            # A cancelled `future` gives its acquisition back by itself: nothing to track.
            if future.done() and not future.cancelled():
                self._track(slot)
        self._after_acquire(slot, new_hold, acquired)
        self._watch_task()
        return acquired

    def _give_back(self, slot: _Slot, min_hold: float | None = None) -> asyncio.Future[object]:
        """Releases one level (with ``min_hold``: the hold, no sooner than that long
        after it was taken); the release runs to its end even if the awaiting task
        is cancelled (as the core's release does), and is tracked when it ends."""
        release: asyncio.Future[object]
        if min_hold is None:
            release = slot.holder.release_async()  # type: ignore[assignment]
        else:
            release = slot.holder.release_min_hold_async(min_hold)  # type: ignore[assignment]

        def released(_f: asyncio.Future[object]) -> None:
            self._after_release(slot)
            self._track(slot)

        release.add_done_callback(released)
        return asyncio.shield(release)

    def wait_lost(self) -> Coroutine[Any, Any, str | None]:
        """An awaitable of the current task's hold through this object: it gives
        the reason once the hold is lost, or None once it is released (or a new
        hold starts). Call it in the task that holds; await it there or anywhere
        (``asyncio.create_task(lock.wait_lost())`` runs a watcher, to cancel the
        work when the lock no longer protects it). :class:`NotOwnedError` if the
        task holds nothing through this object (and its last hold was not lost)."""
        slot = self._current_slot()
        if slot is None or (slot.holder.local_hold_count() == 0 and not slot.lost_event.is_set()):
            raise NotOwnedError(
                f'{self._PUBLIC_NAME} "{self.name}": the current task holds nothing through this lock object'
            )
        event = slot.lost_event
        return event._wait(event._generation)

    async def _release(self, min_hold: float | None = None) -> None:
        try:
            await self._give_back(self._slot(), min_hold)
        finally:
            self._watch_task()

    @contextlib.asynccontextmanager
    async def hold(
        self, timeout: float | None = None, lease: float | None = None, *, min_hold: float | None = None
    ) -> AsyncIterator[Self]:
        """Async context manager that acquires (waiting at most ``timeout`` seconds,
        None = forever) or raises :class:`LockTimeoutError`, and releases on exit
        (no sooner than ``min_hold`` seconds after the acquire: see
        :meth:`ferrolock.Lock.hold`)."""
        check_seconds(min_hold, "min_hold", warn_long=True)
        if not await self._acquire(True, timeout, lease):
            raise self._timed_out(timeout)
        try:
            yield self
        finally:
            await self._release(min_hold)

    async def _aenter(self) -> None:
        await self._acquire(True, -1, None)

    async def _aexit(self) -> None:
        await self._release()

    async def extend(self, additional: float, *, replace: bool = False) -> float:
        """Adds ``additional`` seconds to what is left of the current task's explicit
        lease (``replace=True``: sets it); returns the seconds left now. See
        :meth:`ferrolock.Lock.extend`."""
        check_seconds(additional, "additional", warn_long=True)
        holder = self._slot().holder
        return await (holder.set_lease_async(additional) if replace else holder.extend_async(additional))

    async def reacquire(self) -> float:
        """Resets the current task's explicit lease to the one it was taken with;
        returns it in seconds. See :meth:`ferrolock.Lock.reacquire`."""
        return await self._slot().holder.reacquire_async()


class Lock(_LockBase[Client], _TaskHeld):
    """A distributed re-entrant lock for asyncio; the holder is (this object, the
    current task). Made by :meth:`Client.lock` and :meth:`Client.fenced_lock`.

    A hold ends only by :meth:`release` (or leaving ``async with``), the end of
    an explicit lease, or :meth:`Client.close`: dropping this object, or the end
    of the task that holds, keeps the hold (the client keeps this object alive;
    a task that ends while holding is logged as a warning)."""

    _PUBLIC_NAME = "ferrolock.aio.Lock"

    async def acquire(self, blocking: bool = True, timeout: float | None = -1, *, lease: float | None = None) -> bool:
        """Acquires the lock for the current task (see :meth:`ferrolock.Lock.acquire`).

        Returns False if not acquired in time. Cancelling the task while it waits
        leaves nothing held.
        """
        return await self._acquire(blocking, timeout, lease)

    async def release(self) -> None:
        """Releases one level of the current task's hold. :class:`NotOwnedError` if
        it does not hold the lock, :class:`LockLostError` if the hold was lost."""
        await self._release()

    async def locked(self) -> bool:
        """True if anyone holds the lock (asks Redis)."""
        return await self._probe.is_locked_async()

    async def owned(self) -> bool:
        """True if the current task holds the lock through this object (asks Redis)."""
        holder = self._current()
        return holder is not None and await holder.is_held_async()

    async def hold_count(self) -> int:
        """The current task's hold count through this object (asks Redis)."""
        holder = self._current()
        return 0 if holder is None else await holder.hold_count_async()

    async def remaining_lease(self) -> float | None:
        """Seconds left on the lock's lease; None when not locked, ``inf`` without expiry."""
        return await self._probe.remaining_lease_async()

    async def force_unlock(self) -> bool:
        """Deletes the lock whoever holds it and wakes a waiter. True if it was locked."""
        return await self._probe.force_unlock_async()

    async def set_holder_info(self, info: str | None) -> None:
        """Shows ``info`` next to the current task's hold in :meth:`status` (see
        :meth:`ferrolock.Lock.set_holder_info`)."""
        await self._slot().holder.set_holder_info_async(info)

    async def status(self) -> LockStatus:
        """The lock as the server sees it (see :meth:`ferrolock.Lock.status`)."""
        return LockStatus._from_native(await self._probe.status_async())


# ---------------------------------------------------------------------------
# Multi-locks.


class _AsyncMultiLock(_MultiLockBase[Lock], _TaskHeld):
    """An asyncio multi-lock: :class:`RedLock` and :class:`MultiLock`."""

    _MEMBER = Lock
    _OTHER_FLAVOUR = "ferrolock"

    @classmethod
    async def connect(
        cls,
        urls: Iterable[str],
        name: str,
        *,
        on_lost: OnLostCallback[Self] | None = None,
        **client_options: Any,
    ) -> Self:
        """Connects one :class:`Client` per URL, concurrently (``client_options`` as
        :meth:`Client.connect` takes them), and makes this lock over lock ``name`` on
        each; :meth:`close` closes those clients. Every server must answer now: one
        that is down raises :class:`ConnectionError` (the others are closed again)."""
        results = await asyncio.gather(
            *(Client.connect(url, **client_options) for url in _urls(urls, cls._PUBLIC_NAME)),
            return_exceptions=True,
        )
        clients = [c for c in results if isinstance(c, Client)]
        try:
            for result in results:
                if isinstance(result, BaseException):
                    raise result
            multi = cls([c.lock(name) for c in clients])
        except BaseException:
            for c in clients:
                await c.close()
            raise
        multi._on_lost = on_lost
        multi._owned_clients = list(clients)
        return multi

    async def close(self) -> None:
        """Closes the clients :meth:`connect` made (releasing whatever they hold); a
        no-op for a lock made from existing locks."""
        clients, self._owned_clients = self._owned_clients, []
        results = await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def acquire(self, blocking: bool = True, timeout: float | None = -1, *, lease: float | None = None) -> bool:
        """Acquires the lock for the current task (see :meth:`ferrolock.RedLock.acquire`).

        Returns False if not acquired in time. Cancelling the task while it waits
        leaves nothing held.
        """
        return await self._acquire(blocking, timeout, lease)

    async def release(self) -> None:
        """Releases one level of the current task's hold (see :meth:`ferrolock.RedLock.release`)."""
        await self._release()


class RedLock(_AsyncMultiLock):
    """The asyncio twin of :class:`ferrolock.RedLock`: held while a majority of its
    member :class:`Lock` objects (one per client, one client per independent
    server) are; the holder is (this object, the current task). Made from locks of
    this module, or by :meth:`connect`. See the README ("Redlock and MultiLock")
    for when Redlock is not safe."""

    _PUBLIC_NAME = "ferrolock.aio.RedLock"
    _QUORUM = "majority"


class MultiLock(_AsyncMultiLock):
    """The asyncio twin of :class:`ferrolock.MultiLock`: held only while every
    member :class:`Lock` is."""

    _PUBLIC_NAME = "ferrolock.aio.MultiLock"
    _QUORUM = "all"


# ---------------------------------------------------------------------------
# The family: the read-write lock's pairing, and the counters.


class _TaskIds:
    """One holder id per task, shared by both sides of a read-write lock (see
    :class:`ferrolock._family._ThreadIds`)."""

    def __init__(self, native: _native.Client) -> None:
        self._native = native
        self._ids: weakref.WeakKeyDictionary[asyncio.Task[object], int] = weakref.WeakKeyDictionary()

    def caller_id(self) -> int:
        """The current task's holder id, made on first use."""
        task = _current_task()
        holder_id = self._ids.get(task)
        if holder_id is None:
            holder_id = self._ids[task] = self._native.new_holder_id()
        return holder_id


class ReadWriteLock(_ReadWriteLockBase[Client, Lock]):
    """The asyncio twin of :class:`ferrolock.ReadWriteLock`: many readers or one
    writer; both sides are :class:`Lock` objects whose holder is (this read-write
    lock, task). Made by :meth:`Client.read_write_lock`."""

    _PUBLIC_NAME = "ferrolock.aio.ReadWriteLock"


async def _taken(future: asyncio.Future[_T], give_back: Callable[[_T], Awaitable[object]], what: str) -> _T:
    """Awaits an acquisition. A task cancelled after the acquisition completed
    but before it saw the result gives it back before leaving (one cancelled
    while it waited takes nothing: the native future sees to that)."""
    try:
        return await future
    except asyncio.CancelledError:
        if future.done() and not future.cancelled() and future.exception() is None and future.result():
            try:
                await asyncio.shield(give_back(future.result()))
            except LockError:
                logger.exception("giving back %s after a cancelled acquire failed", what)
        raise


class Semaphore(_SemaphoreBase[Client], _AsyncScoped):
    """The asyncio twin of :class:`ferrolock.Semaphore`: permits that are nobody's.
    ``async with sem:`` takes one permit and gives it back on exit. Cancelling a
    task that waits in :meth:`acquire` takes nothing."""

    _PUBLIC_NAME = "ferrolock.aio.Semaphore"

    async def try_set_permits(self, permits: int) -> bool:
        """Gives the semaphore ``permits`` free permits if it does not exist yet; False if it exists."""
        return await self._native.try_set_permits_async(check_count(permits, "permits"))

    async def acquire(self, blocking: bool = True, timeout: float | None = None, *, permits: int = 1) -> bool:
        """Takes ``permits`` free permits (see :meth:`ferrolock.Semaphore.acquire`);
        False if they were not free in time."""
        count = check_count(permits, "permits")
        wait = _wait_seconds(blocking, timeout)
        future = self._native.acquire_async(count, wait)
        return await _taken(future, lambda _: self._native.release_async(count), f'permits of semaphore "{self.name}"')

    async def release(self, permits: int = 1) -> int:
        """Gives ``permits`` back and wakes as many waiters; returns the free permits right after."""
        return await self._native.release_async(check_count(permits, "permits"))

    async def available(self) -> int:
        """The free permits now (0 for a semaphore that does not exist)."""
        return await self._native.available_async()

    async def drain(self) -> int:
        """Takes every free permit; returns how many."""
        return await self._native.drain_async()

    @contextlib.asynccontextmanager
    async def hold(self, timeout: float | None = None, *, permits: int = 1) -> AsyncIterator[Semaphore]:
        """Async context manager that takes ``permits`` (waiting at most ``timeout``
        seconds) or raises :class:`LockTimeoutError`, and gives them back on exit."""
        if not await self.acquire(True, timeout, permits=permits):
            raise self._timed_out(permits, timeout)
        try:
            yield self
        finally:
            await asyncio.shield(self._native.release_async(permits))

    async def _aenter(self) -> None:
        await self.acquire()

    async def _aexit(self) -> None:
        # Given back even if the task is cancelled while it leaves.
        await asyncio.shield(self._native.release_async(1))


class PermitExpirableSemaphore(_PermitSemaphoreBase[Client]):
    """The asyncio twin of :class:`ferrolock.PermitExpirableSemaphore`. Cancelling
    a task that waits in :meth:`acquire` takes nothing."""

    _PUBLIC_NAME = "ferrolock.aio.PermitExpirableSemaphore"

    async def try_set_permits(self, permits: int) -> bool:
        """Gives the semaphore ``permits`` free permits if it does not exist yet; False if it exists."""
        return await self._native.try_set_permits_async(check_count(permits, "permits"))

    async def acquire(self, timeout: float | None = None, *, lease: float | None = None) -> Permit | None:
        """Takes a permit (see :meth:`ferrolock.PermitExpirableSemaphore.acquire`);
        None if none was free in time."""
        self._check_acquire(timeout, lease)
        future = self._native.acquire_async(None if timeout is None else float(timeout), lease)
        permit_id = await _taken(future, lambda i: self._native.release_async(str(i)), f'a permit of "{self.name}"')
        return self._permit(permit_id, lease)

    async def release(self, permit: Permit | str) -> bool:
        """Gives back ``permit`` (or its id): True if it was out and in time."""
        return await self._native.release_async(_permit_id(permit))

    async def available(self) -> int:
        """The free permits now, after taking back the expired ones."""
        return await self._native.available_async()

    @contextlib.asynccontextmanager
    async def hold(self, timeout: float | None = None, *, lease: float | None = None) -> AsyncIterator[Permit]:
        """Async context manager that takes a permit or raises
        :class:`LockTimeoutError`, gives it, and releases it on exit."""
        permit = await self.acquire(timeout, lease=lease)
        if permit is None:
            raise self._timed_out(timeout)
        try:
            yield permit
        finally:
            await asyncio.shield(self._native.release_async(permit.id))


class CountDownLatch(_LatchBase[Client]):
    """The asyncio twin of :class:`ferrolock.CountDownLatch`."""

    _PUBLIC_NAME = "ferrolock.aio.CountDownLatch"

    async def try_set_count(self, count: int) -> bool:
        """Sets the count (1 or more) of a latch that is open; False if it is still counting down."""
        return await self._native.try_set_count_async(check_count(count, "count"))

    async def count_down(self) -> int:
        """Counts down by one; returns the count left (at 0 the latch opens)."""
        return await self._native.count_down_async()

    async def count(self) -> int:
        """The count now (0: open)."""
        return await self._native.count_async()

    async def wait(self, timeout: float | None = None) -> bool:
        """Waits until the latch is open, at most ``timeout`` seconds (None: as long
        as it takes); True once open, False at the deadline. Cancelling it leaves
        no subscription."""
        check_seconds(timeout, "timeout", warn_long=True)
        return await self._native.wait_async(None if timeout is None else float(timeout))


class Election(_ElectionBase[Client], _AsyncScoped):
    """The asyncio twin of :class:`ferrolock.Election` (``ferrolock.aio.Election``):
    the same candidate, its calls awaited. ``async with election:`` campaigns and
    resigns at the end."""

    _PUBLIC_NAME = "ferrolock.aio.Election"

    @overload
    async def campaign(self, timeout: None = None) -> Leadership: ...
    @overload
    async def campaign(self, timeout: float) -> Leadership | None: ...
    async def campaign(self, timeout: float | None = None) -> Leadership | None:
        """Waits until this candidate leads (at most ``timeout`` seconds) and returns
        its leadership, or None. Cancelled, it leads nothing."""
        check_seconds(timeout, "timeout", warn_long=True)
        return self._led(await self._native.campaign_async(timeout))

    async def resign(self) -> bool:
        """Ends this candidate's leadership: True if it led, False if it did not."""
        leadership = self._leadership
        resigned = await self._native.resign_async()
        if leadership is not None:
            self._ended(leadership)
        return resigned

    async def leader(self) -> Leader | None:
        """Who leads now (one read), or None."""
        return _leader(await self._native.leader_async())

    async def observe(self) -> Observer:
        """An observer of this election, subscribed from now on:
        ``async for leader in await election.observe(): ...``."""
        return Observer(await self._native.observe_async())

    async def _aenter(self) -> None:
        await self.campaign()

    async def _aexit(self) -> None:
        await self.resign()
