"""Locks: what every lock object shares, single or multi, blocking or asyncio
(:class:`_Holdable`: a slot per caller, the clients keeping it alive while it
holds, loss reporting); what the blocking ones share (:class:`_ThreadHeld`: a
slot per thread, acquire, release, ``hold``, ``with``); what :class:`Lock` and
its asyncio twin :class:`ferrolock.aio.Lock` share (:class:`_LockBase`: one
client and name, the properties). The blocking :class:`Lock` is in ``_client``,
beside the client that makes it (as the asyncio one is in :mod:`ferrolock.aio`)."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, Union

from . import _native
from ._args import check_seconds
from ._errors import InvalidArgumentError, LockTimeoutError
from ._holds import _caller_ended, _HeldLocks, logger
from ._scope import _Scoped
from ._status import HolderEntry

if TYPE_CHECKING:
    from typing_extensions import Self

    from ._base import _ClientBase

_C = TypeVar("_C", bound="_ClientBase")

_L = TypeVar("_L")

OnLostCallback = Union[Callable[[_L], object], Callable[[_L, str], object]]
"""An ``on_lost`` callback for locks of type ``_L``: ``on_lost(lock, reason)``
(or ``on_lost(lock)``, the older form), called from a background thread."""


def _takes_reason(callback: Callable[..., object]) -> bool:
    """True if ``callback`` takes (lock, reason); False for the older (lock) form."""
    try:
        inspect.signature(callback).bind(None, "")
    except TypeError:
        return False
    except ValueError:  # no signature to inspect: assume the current form
        return True
    return True


def _wait_seconds(blocking: bool, timeout: float | None) -> float | None:
    """Translates threading's (blocking, timeout) into the core's wait bound."""
    check_seconds(timeout, "timeout", warn_long=True)
    if not blocking:
        if timeout is not None and timeout != -1:
            raise InvalidArgumentError("can't specify a timeout for a non-blocking acquire")
        return 0.0
    if timeout is None or timeout == -1:
        return None
    return float(timeout)


_LAZY = threading.Lock()
"""Makes what a lock object makes late and rarely (a LostEvent, its condition) and
hands a lock object's spare holder to one caller."""

_PID = os.getpid()
"""This process's id, one int object that every thread slot shares."""


def _after_fork() -> None:
    global _LAZY, _PID
    _LAZY = threading.Lock()  # another thread may have held it at fork
    _PID = os.getpid()


os.register_at_fork(after_in_child=_after_fork)


class LostEvent(threading.Event):
    """A :class:`threading.Event` set when the current hold of a lock object (of
    the calling thread or task) is lost: ``lock.lost_event``. Cleared when that
    caller starts a new hold. :attr:`reason` says why the hold was lost."""

    def __init__(self) -> None:
        # Not threading.Event's __init__: its condition (a lock and a deque, a third
        # of a hold's Python memory) is made when something first waits or sets it.
        self._flag = False
        self._lazy_cond: threading.Condition | None = None
        self.reason: str | None = None
        """Why the hold was lost (None while it is not)."""
        self._mutex = threading.Lock()
        self._generation = 0
        """Counts the holds: a waiter of an earlier hold gets None."""
        self._waiters: list[asyncio.Future[str | None]] = []

    def _condition(self) -> threading.Condition:
        cond = self._lazy_cond
        if cond is None:
            with _LAZY:
                cond = self._lazy_cond
                if cond is None:
                    cond = self._lazy_cond = threading.Condition(threading.Lock())
        return cond

    def set(self) -> None:
        """Marks the hold lost and wakes every waiter (as ``threading.Event.set``)."""
        cond = self._condition()
        with cond:
            self._flag = True
            cond.notify_all()

    def clear(self) -> None:
        """Resets the flag (as ``threading.Event.clear``)."""
        # Without a condition nobody waits: a wait that makes one meanwhile reads the
        # flag before or after this, as it would have with one.
        cond = self._lazy_cond
        if cond is None:
            self._flag = False
            return
        with cond:
            self._flag = False

    def wait(self, timeout: float | None = None) -> bool:
        """Waits until the hold is lost or ``timeout`` seconds pass; True if lost
        (as ``threading.Event.wait``)."""
        cond = self._condition()
        with cond:
            return self._flag or cond.wait(timeout)

    def _at_fork_reinit(self) -> None:
        self._lazy_cond = None  # the child's only thread waits on nothing

    def _fire(self, reason: str) -> None:
        """The hold was lost (from the core's background thread)."""
        with self._mutex:
            self.reason = reason
            self.set()
            waiters, self._waiters = self._waiters, []
        for future in waiters:
            _resolve(future, reason)

    def _begin(self) -> None:
        """A new hold starts: clear, and let waiters of the earlier hold go."""
        with self._mutex:
            self.reason = None
            self.clear()
            self._generation += 1
            waiters, self._waiters = self._waiters, []
        for future in waiters:
            _resolve(future, None)

    def _end(self) -> None:
        """The hold was released: waiters get None."""
        with self._mutex:
            if self.is_set():
                return
            self._generation += 1
            waiters, self._waiters = self._waiters, []
        for future in waiters:
            _resolve(future, None)

    async def _wait(self, generation: int) -> str | None:
        """Waits until the hold of ``generation`` is lost (its reason) or ends (None)."""
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        with self._mutex:
            if generation != self._generation:
                return self.reason if self.is_set() else None
            if self.is_set():
                return self.reason
            self._waiters.append(future)
        try:
            return await future
        finally:
            with self._mutex:
                if future in self._waiters:
                    self._waiters.remove(future)


def _resolve(future: asyncio.Future[str | None], value: str | None) -> None:
    """Completes ``future`` on its own loop (called from any thread)."""

    def complete() -> None:
        if not future.done():
            future.set_result(value)

    try:
        future.get_loop().call_soon_threadsafe(complete)
    except RuntimeError:
        pass  # its loop is closed: nobody waits any more


_reporting = threading.local()
"""While an ``on_lost`` callback runs (on a background thread): the lock object and
the slot whose hold was lost, so that ``lock.lost`` and friends answer for it."""


class _Slot:
    """A caller's (thread's or task's) native holder, or the one shared holder of a
    ``holder_id``; for a multi-lock, also its members' holders for that same caller
    (in member order). ``label``: the thread or task name its holder's notes say,
    as last given to the core (an acquire calls into the core only when it changed).
    ``dispatch``: its holder's on-lost hook, which keeps its :class:`LostEvent`."""

    __slots__ = ("holder", "members", "dispatch", "label")

    def __init__(self, holder: _native.Holder, members: Sequence[_native.Holder], lock: _LockRef) -> None:
        self.holder = holder
        self.members = tuple(members)
        self.dispatch = _LostDispatch(lock)
        self.label: str | None = None
        holder.set_on_lost(self.dispatch)

    @property
    def lost_event(self) -> LostEvent:
        """The :class:`LostEvent` of this slot's holds, made on first use."""
        return self.dispatch.lost_event()

    def _begin(self) -> None:
        """A new hold starts (the event, if made, is cleared)."""
        event = self.dispatch.event
        if event is not None:
            event._begin()

    def _end(self) -> None:
        """The hold was released (waiters of the event, if made, get None)."""
        event = self.dispatch.event
        if event is not None:
            event._end()


class _Holdable:
    """What every lock object shares, single or multi, blocking or asyncio: a
    :class:`_Slot` per caller, the clients keeping the object alive while it
    holds, and loss reporting.

    Subclasses say how a caller finds its slot (``_init_callers``, ``_lookup``,
    ``_remember``: :class:`_ThreadHeld`, :class:`ferrolock.aio._TaskHeld`) and
    how its native holder is made (``_new_holder``: a single lock or a
    multi-lock), and call :meth:`_track` after every acquire and release, so
    that the clients keep this object alive exactly while one of its holders
    holds."""

    _PUBLIC_NAME: ClassVar[str]
    """The class as the user knows it, for ``repr`` and messages."""
    _members: tuple[_Holdable, ...] = ()
    """A multi-lock's member locks (none for a single lock)."""
    _probe: _native.Holder
    """Answers questions about the lock as a whole."""

    def __init__(self, on_lost: OnLostCallback[Self] | None) -> None:
        self._init_callers()
        self._on_lost: OnLostCallback[Any] | None = on_lost
        self._ref = _LockRef(self, _forget_slots)
        self._shared: _Slot | None = None
        """The slot of every caller (``holder_id``), if any."""
        self._helds: tuple[_HeldLocks, ...] = ()
        """The clients' records of the lock objects that hold."""

    @property
    def name(self) -> str:
        """The lock name."""
        return self._probe.name

    def _init_callers(self) -> None:
        """Makes the (empty) map from callers to their slots."""
        raise NotImplementedError

    def _lookup(self, strict: bool) -> _Slot | None:
        """The caller's slot, if any; ``strict`` raises when there is no caller identity."""
        raise NotImplementedError

    def _remember(self, holder: _native.Holder, members: Sequence[_native.Holder]) -> _Slot:
        """Makes and keeps the caller's slot."""
        raise NotImplementedError

    def _new_holder(self) -> tuple[_native.Holder, Sequence[_native.Holder]]:
        """A new native holder for the caller, and its members' holders for the caller."""
        raise NotImplementedError

    def _slot(self) -> _Slot:
        """The caller's slot, made on first use."""
        if self._shared is not None:
            return self._shared
        slot = self._lookup(strict=True)
        if slot is None:
            holder, members = self._new_holder()
            slot = self._remember(holder, members)
        return slot

    def _current_slot(self) -> _Slot | None:
        """The caller's slot if it has one (never makes it); inside ``on_lost``, the
        slot whose hold was lost."""
        reporting = getattr(_reporting, "lost", None)
        if reporting is not None and reporting[0] is self:
            slot: _Slot = reporting[1]
            return slot
        return self._shared if self._shared is not None else self._lookup(strict=False)

    def _current(self) -> _native.Holder | None:
        """The caller's holder if it has one (never makes it)."""
        slot = self._current_slot()
        return None if slot is None else slot.holder

    @property
    def lost_event(self) -> LostEvent:
        """A :class:`threading.Event`-like :class:`LostEvent`, set when the caller's
        (thread's or task's) current hold through this object is lost, with the
        reason in ``lost_event.reason``; cleared when the caller starts a new hold.
        Check it, or ``wait()`` on it from another thread, to stop work that the
        lock no longer protects."""
        slot = self._current_slot()
        return (slot if slot is not None else self._slot()).lost_event

    def _set_label(self, slot: _Slot, label: str) -> None:
        """Names the caller (its thread or task) in the notes of ``slot``'s holds;
        called by an acquire when the name differs from ``slot.label``."""
        slot.holder.set_holder_label(label)
        slot.label = label

    def _timeout_error(self, message: str, timeout: float | None) -> LockTimeoutError:
        """A :class:`LockTimeoutError` carrying who held the lock when the caller's
        acquire timed out (the core read it then), named in the message too. A
        single try (``timeout`` 0) reads nothing: what the core kept is older."""
        holder = self._current() if timeout else None
        raw = None if holder is None else holder.last_holder()
        seen = None if raw is None else HolderEntry._from_native(raw)
        error = LockTimeoutError(message if seen is None else f"{message}; it is held by {seen.description}")
        error.holder = seen
        return error

    def _before_acquire(self, slot: _Slot) -> bool:
        """True if an acquire through ``slot`` would start a new hold."""
        return slot.holder.local_hold_count() == 0

    def _after_acquire(self, slot: _Slot, new_hold: bool, acquired: bool) -> None:
        if new_hold and acquired:
            slot._begin()

    def _after_release(self, slot: _Slot) -> None:
        if slot.holder.local_hold_count() == 0:
            slot._end()

    def _track(self, slot: _Slot) -> None:
        """After an acquire or release through ``slot``: the clients keep the members
        and this object alive while they hold."""
        for member, holder in zip(self._members, slot.members):
            member._keep(holder)
        self._keep(slot.holder)

    def _keep(self, holder: _native.Holder) -> None:
        for held in self._helds:
            held.track(self, holder)

    def _settle(self) -> None:
        """After a loss: the clients forget the holders of this object that hold no more."""
        for held in self._helds:
            held.settle(self)

    def _notify_lost(self, reason: str) -> None:
        callback = self._on_lost
        if callback is None:
            return
        if _takes_reason(callback):
            callback(self, reason)  # type: ignore[call-arg]
        else:
            callback(self)  # type: ignore[call-arg]

    def _timed_out(self, timeout: float | None) -> LockTimeoutError:
        """The error of a ``hold(timeout)`` that did not acquire in time."""
        raise NotImplementedError


class _LostDispatch:
    """The native on-lost hook of a slot's holder: sets the slot's :class:`LostEvent`,
    lets the clients forget the lost hold (:class:`ferrolock._holds._HeldLocks`)
    and calls the lock's ``on_lost`` (with ``lock.lost`` answering for the slot).
    The core logs the loss itself (a warning on a ``"ferrolock.*"`` logger).

    Holds the lock object only weakly, so that it is not kept alive by its own
    holder (while it holds, its clients keep the lock object alive), and finds the
    slot through it (:meth:`_slot`). Keeps the slot's event (made when first asked
    for, or at a loss), which outlives the slot when a thread ends while it holds:
    whoever waits on it still learns of the loss. A small object rather than a
    closure, and no reference to the slot: one of these per held lock."""

    __slots__ = ("lock", "event")

    def __init__(self, lock: _LockRef) -> None:
        self.lock = lock
        self.event: LostEvent | None = None

    def lost_event(self) -> LostEvent:
        """The event, made on first use."""
        event = self.event
        if event is None:
            with _LAZY:
                event = self.event
                if event is None:
                    event = self.event = LostEvent()
        return event

    def _slot(self, lock: _Holdable) -> _Slot | None:
        """The slot this is the hook of, if it is still there: the shared one, or
        one in the tables of the callers that used ``lock`` (it is rarely more than
        one: this runs only at a loss)."""
        shared = lock._shared
        if shared is not None and shared.dispatch is self:
            return shared
        tables = self.lock.tables
        for table_ref in tables if isinstance(tables, list) else () if tables is None else (tables,):
            table = table_ref()
            slot = None if table is None else table.get(self.lock)
            if slot is not None and slot.dispatch is self:
                return slot
        return None

    def __call__(self, message: str, reason: str) -> None:
        lock = self.lock()
        lost = None if lock is None else self._slot(lock)
        # The caller may have started a new hold before this (delayed) report of
        # the old one: the event belongs to the current hold.
        if lost is None or lost.holder.lost:
            if lost is not None or self.event is not None:
                self.lost_event()._fire(reason)
        if lock is None:
            return
        try:
            lock._settle()
            _reporting.lost = None if lost is None else (lock, lost)
            try:
                lock._notify_lost(reason)
            finally:
                _reporting.lost = None
        except Exception:
            logger.exception("the on_lost callback of lock %r raised", lock.name)


class _ThreadSlot(_Slot):
    """A thread's slot in a blocking lock object, kept in the thread's
    :class:`_CallerSlots`. Its finalisation, when the thread ends, reports a hold
    the thread left behind."""

    __slots__ = ("_thread", "_pid")

    def __init__(self, holder: _native.Holder, members: Sequence[_native.Holder], lock: _LockRef) -> None:
        super().__init__(holder, members, lock)
        self._thread = threading.current_thread().name
        self._pid = _PID

    def __del__(self, _ended: Callable[..., None] = _caller_ended) -> None:
        # Bound at definition: the main thread's table (and so its slots) goes at
        # exit after this module's globals were cleared.
        _ended("thread", self._thread, self.dispatch.lock, self.holder, self._pid)


class _CallerSlots(dict["_LockRef", "_Slot"]):
    """One caller's slots in the lock objects it used, by lock object (its
    :class:`_LockRef`, which hashes and compares as the object while it lives):
    a thread's in the blocking ones (:data:`_THREAD`), a task's in the asyncio
    ones (:data:`ferrolock.aio._TASKS`).

    One table per caller, not a map of callers per lock object (a
    ``threading.local`` or a ``WeakKeyDictionary``: over half of a lock object's
    Python memory): the caller's end drops its table and so its slots, as those
    maps did; a lock object's collection drops its slots from every table
    (:func:`_forget_slots`)."""

    __slots__ = ("ref", "__weakref__")

    def __init__(self) -> None:
        super().__init__()
        self.ref = weakref.ref(self)
        """Shared by the lock objects with a slot here (it must not keep the table)."""


class _LockRef(weakref.ReferenceType):  # type: ignore[type-arg]
    """A lock object's weak reference, which also knows the (weakly referenced)
    :class:`_CallerSlots` where the object has slots: none, one, or a list."""

    __slots__ = ("tables",)

    def __init__(self, lock: Any, callback: Callable[[_LockRef], object]) -> None:
        super().__init__(lock, callback)  # type: ignore[call-arg]
        self.tables: weakref.ReferenceType[_CallerSlots] | list[weakref.ReferenceType[_CallerSlots]] | None = None

    def add_table(self, table: weakref.ReferenceType[_CallerSlots]) -> None:
        """Notes that the object has a slot in ``table`` (forgetting the tables of
        threads that ended)."""
        with _LAZY:
            tables = self.tables
            if tables is None:
                self.tables = table
            elif isinstance(tables, list):
                self.tables = [t for t in tables if t() is not None and t is not table] + [table]
            elif tables is not table:
                self.tables = [tables, table] if tables() is not None else table


def _forget_slots(ref: _LockRef) -> None:
    """A lock object was collected: its slots leave the threads' tables (their
    holders go now, as they did with the object's ``threading.local``)."""
    tables = ref.tables
    for table_ref in tables if isinstance(tables, list) else () if tables is None else (tables,):
        table = table_ref()
        if table is not None:
            table.pop(ref, None)


_THREAD = threading.local()
"""Each thread's :class:`_CallerSlots` (attribute ``slots``), made on first use."""


class _ThreadHeld(_Holdable, _Scoped):
    """What the blocking lock objects (:class:`Lock`, :class:`ferrolock.RedLock`,
    :class:`ferrolock.MultiLock`) share: a slot per thread, and acquire, release,
    :meth:`hold` and ``with``."""

    def _init_callers(self) -> None:
        pass  # the threads keep the slots (_THREAD)

    def _lookup(self, strict: bool) -> _Slot | None:
        table: _CallerSlots | None = getattr(_THREAD, "slots", None)
        return None if table is None else table.get(self._ref)

    def _remember(self, holder: _native.Holder, members: Sequence[_native.Holder]) -> _Slot:
        slot = _ThreadSlot(holder, members, self._ref)
        table: _CallerSlots | None = getattr(_THREAD, "slots", None)
        if table is None:
            table = _THREAD.slots = _CallerSlots()
        table[self._ref] = slot
        self._ref.add_table(table.ref)
        return slot

    def _acquire(self, blocking: bool, timeout: float | None, lease: float | None) -> bool:
        wait = _wait_seconds(blocking, timeout)
        check_seconds(lease, "lease", warn_long=True)
        slot = self._slot()
        label = threading.current_thread().name
        if label != slot.label:
            self._set_label(slot, label)
        new_hold = self._before_acquire(slot)
        acquired = False
        try:
            acquired = slot.holder.acquire(wait, lease)
            return acquired
        finally:
            self._after_acquire(slot, new_hold, acquired)
            self._track(slot)

    def _release(self, min_hold: float | None = None) -> None:
        slot = self._slot()
        try:
            if min_hold is None:
                slot.holder.release()
            else:
                slot.holder.release_min_hold(min_hold)
        finally:
            self._after_release(slot)
            self._track(slot)

    @contextlib.contextmanager
    def hold(self, timeout: float | None = None, lease: float | None = None, *, min_hold: float | None = None) -> Iterator[Self]:
        """Context manager that acquires (waiting at most ``timeout`` seconds, None =
        forever) or raises :class:`LockTimeoutError`, and releases on exit.

        ``min_hold`` (seconds; single locks): the hold ends no sooner than that long
        after it was taken, even if the block ends sooner (or raises): the rest is
        left on a fixed lease, nothing renews or releases it (a cron job on several
        hosts, each trying with ``timeout=0``: a host whose schedule fires a little
        later finds it held and skips)."""
        check_seconds(min_hold, "min_hold", warn_long=True)
        if not self._acquire(True, timeout, lease):
            raise self._timed_out(timeout)
        try:
            yield self
        finally:
            self._release(min_hold)

    def _enter(self) -> None:
        self._acquire(True, -1, None)

    def _exit(self) -> None:
        self._release()

    def extend(self, additional: float, *, replace: bool = False) -> float:
        """Adds ``additional`` seconds to what is left of the calling thread's
        explicit lease (``replace=True``: sets what is left to ``additional``), as
        redis-py's ``Lock.extend``. Returns the seconds left now.

        :class:`NotOwnedError` if the thread holds nothing through this object,
        :class:`LockLostError` if its hold was lost, :class:`InvalidArgumentError`
        for a hold taken without a lease (the watchdog renews those) or a duration
        out of range (1 ms to 7 days). A multi-lock extends every member it holds.
        """
        check_seconds(additional, "additional", warn_long=True)
        holder = self._slot().holder
        return holder.set_lease(additional) if replace else holder.extend(additional)

    def reacquire(self) -> float:
        """Resets the calling thread's explicit lease to the one it was taken with
        (redis-py's ``Lock.reacquire``); returns it in seconds. Errors as :meth:`extend`."""
        return self._slot().holder.reacquire()


class _CallerIds(Protocol):
    """Gives each caller (thread or task) one holder id, for lock objects whose
    callers must be the same holder across objects: the two sides of a read-write lock."""

    def caller_id(self) -> int: ...


class _LockBase(_Holdable, Generic[_C]):
    """What :class:`Lock` and :class:`ferrolock.aio.Lock` share: one lock (one
    client, one name).

    Holder identity: one native holder per caller (thread or task), created on
    first use, or one shared holder for every caller when an explicit
    ``holder_id`` is given."""

    def __init__(
        self,
        client: _C,
        name: str,
        *,
        kind: str = "reentrant",
        on_lost: OnLostCallback[Self] | None = None,
        holder_id: int | None = None,
        caller_ids: _CallerIds | None = None,
    ) -> None:
        """A lock object of ``client`` on ``name``, of the lock kind ``kind`` by
        name (``"reentrant"``, ``"fenced"``, ``"fair"``, ``"read"``, ``"write"``);
        made by ``client.lock(name)``, ``client.fenced_lock(name)``, ... whose docs
        say what ``on_lost`` and ``holder_id`` do. With ``caller_ids``, a caller's
        holder takes its id from there (shared with other lock objects)."""
        super().__init__(on_lost)
        self._caller_ids = caller_ids
        self._client = client
        self._native_client = client._native
        self._helds = client._helds
        # Validates the name and the kind now; answers questions about the lock as a whole.
        self._probe = self._native_client.holder(name, kind, holder_id)
        if holder_id is not None:
            self._shared = _Slot(self._probe, (), self._ref)
        # The probe has a fresh id of its own that nothing holds with: the first caller
        # takes it as its holder rather than make a second one (a native holder is
        # most of what a held lock costs in memory).
        self._spare: _native.Holder | None = self._probe if holder_id is None and caller_ids is None else None

    def _new_holder(self) -> tuple[_native.Holder, Sequence[_native.Holder]]:
        if self._spare is not None:
            with _LAZY:  # one caller takes it
                spare, self._spare = self._spare, None
            if spare is not None:
                return spare, ()
        holder_id = None if self._caller_ids is None else self._caller_ids.caller_id()
        return self._native_client.holder(self._probe.name, self._probe.kind, holder_id), ()

    def _timed_out(self, timeout: float | None) -> LockTimeoutError:
        return self._timeout_error(f'lock "{self.name}" was not acquired within {timeout} s', timeout)

    @property
    def client(self) -> _C:
        """The client this lock was made from."""
        return self._client

    @property
    def kind(self) -> str:
        """The lock's kind by name: ``"reentrant"``, ``"fenced"``, ``"fair"``, or
        ``"read"`` / ``"write"`` for the sides of a read-write lock."""
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
        kind = "lock" if self.kind == "reentrant" else f"{self.kind} lock"
        return f"<{self._PUBLIC_NAME} {kind} {self.name!r}>"

