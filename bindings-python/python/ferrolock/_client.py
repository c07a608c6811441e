"""The blocking API: :class:`Client` and the objects it makes (:class:`Lock`,
:class:`ReadWriteLock`, :class:`Semaphore`, :class:`PermitExpirableSemaphore`,
:class:`CountDownLatch`, :class:`Election`), as :mod:`ferrolock.aio` holds the
asyncio one. What both share sits below, in the modules these import
(:class:`_ClientBase` in ``_base``, ``_LockBase`` in ``_lock``, ...), so that no
object reaches back into the module of the client that makes it."""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
from collections.abc import Callable, Iterator
from typing import Any, ParamSpec, Protocol, TypeVar, overload

from . import _native
from ._args import check_count, check_number, check_seconds
from ._base import _ClientBase
from ._election import Leader, Leadership, Observer, _ElectionBase, _leader
from ._family import (
    Permit,
    _LatchBase,
    _PermitSemaphoreBase,
    _permit_id,
    _ReadWriteLockBase,
    _SemaphoreBase,
    _ThreadIds,
)
from ._holds import logger
from ._lock import OnLostCallback, _LockBase, _ThreadHeld, _wait_seconds
from ._scope import _Scoped
from ._status import Inspection, LockStatus

_P = ParamSpec("_P")
_R = TypeVar("_R")
_R_co = TypeVar("_R_co", covariant=True)
_LockT_co = TypeVar("_LockT_co", covariant=True)

_CONNECT_OPTIONS = (
    "url",
    "watchdog_timeout",
    "response_timeout",
    "connect_timeout",
    "retry_window",
    "drift_factor",
    "sentinel_username",
    "sentinel_password",
    "replica_ack",
    "replica_ack_aof",
    "replica_ack_timeout",
    "app_name",
    "holder_notes",
    "holder_note_after",
    "slow_wait_log",
)
"""The arguments of :class:`Client` and :meth:`ferrolock.aio.Client.connect`, as
the native ``connect`` and ``connect_async`` take them."""


def _connect_options(arguments: dict[str, Any]) -> dict[str, Any]:
    """The native connect's keyword arguments, picked from ``arguments``: the
    ``locals()`` of :class:`Client` or :meth:`ferrolock.aio.Client.connect`,
    checked for types (TypeError naming the argument). Also picks up the level of
    logger ``"ferrolock"`` for the log bridge now."""
    options = {name: arguments[name] for name in _CONNECT_OPTIONS}
    if not isinstance(options["url"], str):
        raise TypeError(f"url must be a str, not {type(options['url']).__name__}")
    check_seconds(options["watchdog_timeout"], "watchdog_timeout", warn_long=True)
    for name in ("response_timeout", "connect_timeout", "retry_window", "replica_ack_timeout"):
        check_seconds(options[name], name)
    check_number(options["drift_factor"], "drift_factor")
    ack = options["replica_ack"]
    if isinstance(ack, bool):
        options["replica_ack"] = "one" if ack else "off"
    elif not isinstance(ack, str):
        raise TypeError(
            f'replica_ack must be "off", "one", "majority", "all" or a bool, not {type(ack).__name__}'
        )
    if not isinstance(options["replica_ack_aof"], bool):
        raise TypeError(f"replica_ack_aof must be a bool, not {type(options['replica_ack_aof']).__name__}")
    for name in ("sentinel_username", "sentinel_password", "app_name"):
        if options[name] is not None and not isinstance(options[name], str):
            raise TypeError(f"{name} must be a str or None, not {type(options[name]).__name__}")
    if not isinstance(options["holder_notes"], str):
        raise TypeError(f'holder_notes must be "off", "long" or "always", not {type(options["holder_notes"]).__name__}')
    check_seconds(options["holder_note_after"], "holder_note_after")
    if options["holder_note_after"] is None:
        raise TypeError("holder_note_after must be a number of seconds (int or float), not None")
    check_seconds(options["slow_wait_log"], "slow_wait_log")
    if options["slow_wait_log"] is None:
        options["slow_wait_log"] = math.inf  # the native spelling of "never"
    _native.sync_log_level()
    return options


class Synchronized(Protocol[_P, _R_co, _LockT_co]):
    """A function wrapped by ``client.synchronized(name)``: called like the
    function, it runs while holding :attr:`lock`. Has the function's name, doc
    string and ``__wrapped__`` (``functools.wraps``)."""

    __name__: str
    __qualname__: str
    __wrapped__: Callable[..., object]

    @property
    def lock(self) -> _LockT_co:
        """The lock it holds while it runs (``lock.token`` inside, for a fenced lock)."""
        ...

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R_co: ...


def _check_hold_options(timeout: float | None, lease: float | None) -> None:
    check_seconds(timeout, "timeout", warn_long=True)
    check_seconds(lease, "lease", warn_long=True)


class Client(_ClientBase, _Scoped):
    """A connection to one Redis deployment, shared by all locks made from it.

    ``url`` names the deployment, in one of three forms:

    - ``redis://[user:password@]host[:port][/db]`` (``rediss://`` for TLS): one
      server. A Redis Cluster node given this way is used as the cluster's seed.
    - ``redis+sentinel://[user:password@]host:port[,host:port...]/<master name>[/<db>]``
      (``rediss+sentinel://`` for TLS): the master that the listed sentinels name,
      followed across failovers. The URL's credentials are the data nodes'; the
      sentinels' own are ``sentinel_username`` / ``sentinel_password``.
    - ``redis+cluster://[user:password@]host:port[,host:port...]``
      (``rediss+cluster://``): a Redis Cluster, through any of the listed nodes.

    A malformed URL raises :class:`InvalidArgumentError` (its message never echoes
    the URL, which may hold a password). Connecting checks that the server answers,
    so a wrong address or password raises :class:`ConnectionError` here.

    Durations are in seconds: ``watchdog_timeout`` is the lease of locks taken
    without an explicit lease (renewed every third of it while held).
    ``drift_factor`` (0 to 0.5, default 0.01) allows for clock drift: a holder
    counts its hold as lost ``lease * drift_factor + 2 ms`` before Redis would
    expire it; out of range raises :class:`InvalidArgumentError`.

    Behind Sentinel and on a Cluster, ``replica_ack`` says how many of the master's
    replicas must acknowledge every acquire (``WAIT``, up to ``replica_ack_timeout``
    seconds: 1 ms to 600 s, default 1.0) before it is returned: ``"one"`` (the
    default, also ``True``), ``"majority"`` (floor(n/2)+1 of the n replicas the
    master should have), ``"all"``, or ``"off"`` (also ``False``: no wait). An
    acquire that falls short is undone and raises :class:`NotReplicatedError`
    (retrying is safe), and so does every acquire while the master has no replica
    (but under ``"off"``). ``replica_ack_aof=True`` counts only replicas that
    fsynced it to their append-only file (``WAITAOF``, Redis 7.2 or later; an older
    server raises :class:`InvalidArgumentError` naming its version). This narrows
    the window in which a failover loses a lock just taken; replication stays
    asynchronous, so it cannot close it. All are ignored on one server.
    ``app_name`` (1 to 64 of ``[A-Za-z0-9._-]``) names every
    connection ``ferrolock:<client id>:<app name>`` (without it
    ``ferrolock:<client id>``), as ``CLIENT LIST`` shows, and the holders' notes.

    Holder notes say who holds a lock (``app_name``, host, pid, the thread or
    asyncio task that acquired, since when) for :meth:`Lock.status`,
    :meth:`inspect`, ``ferrolock status`` / ``top`` and other clients' waiters
    (:attr:`LockTimeoutError.holder`). ``holder_notes`` says when a hold writes
    one: ``"long"`` (the default) once it has lasted ``holder_note_after``
    seconds (default 1.0; written in the watchdog's next round, so a short hold
    costs nothing), ``"always"`` right after every acquire (one more round trip
    each), ``"off"`` never. An acquire that has waited ``slow_wait_log`` seconds
    (default 10.0; None: never) logs at INFO, on a ``"ferrolock.*"`` logger, the
    lock and who holds it, and again each time its wait doubles.

    Bad types raise :class:`TypeError`, bad values :class:`InvalidArgumentError`
    (an unknown ``holder_notes`` mode or ``replica_ack`` policy, a negative
    duration), naming the argument;
    passwords never appear in messages, logs or ``repr``.

    Use it as a context manager, or call :meth:`close` when done: the client
    keeps every hold that is not released (even of a garbage-collected lock
    object or of a thread that ended) until then. A client made before
    ``os.fork()`` works in the child: its first call there connects again (with
    the same settings; a new client id), holding nothing the parent held; the
    parent's holds are unaffected. Once closed, every call raises
    :class:`ClientClosedError`.
    """

    _PUBLIC_NAME = "ferrolock.Client"

    def __init__(
        self,
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
    ) -> None:
        super().__init__(_native.Client.connect(**_connect_options(locals())))

    def inspect(self, name: str, kind: str | None = None) -> Inspection:
        """What ``name`` is, told from its keys (a lock, fenced, fair or read-write
        lock, a semaphore, a permit-expirable semaphore or a count-down latch), and
        what is going on there: holders with their notes, lease left, waiters,
        permits or count, last fencing token (:class:`ferrolock.Inspection`). Reads
        only; works on every topology. ``kind`` reads it as that kind (see
        :attr:`Inspection.kind`). WrongTypeError if the key holds something else."""
        return Inspection._from_native(self._native.inspect(name, kind))

    def scan(self, prefix: str = "") -> list[str]:
        """The names of every lock-family object whose name starts with ``prefix``
        (all of them without one), sorted: one SCAN pass over the server, Sentinel's
        master or every master of a cluster. A key holding a number counts (a
        semaphore or latch, or any counter)."""
        return self._native.scan(prefix)

    def lock(self, name: str, on_lost: OnLost | None = None, *, holder_id: int | None = None) -> Lock:
        """A re-entrant lock on ``name`` (1 to 4096 bytes).

        ``on_lost(lock, reason)`` (or ``on_lost(lock)``) is called from a background
        thread when a hold of this lock object is lost; inside it ``lock.lost`` is
        True. With ``holder_id``, every thread using this object acts as the one
        holder ``<client id>:<holder_id>`` (hand-over cases).
        """
        return Lock(self, name, kind="reentrant", on_lost=on_lost, holder_id=holder_id)

    def fenced_lock(self, name: str, on_lost: OnLost | None = None, *, holder_id: int | None = None) -> Lock:
        """Like :meth:`lock`, for a fenced lock: every acquisition gets a strictly
        increasing :attr:`Lock.token` (Redisson ``RFencedLock`` compatible)."""
        return Lock(self, name, kind="fenced", on_lost=on_lost, holder_id=holder_id)

    def fair_lock(self, name: str, on_lost: OnLost | None = None, *, holder_id: int | None = None) -> Lock:
        """Like :meth:`lock`, for a fair lock (Redisson ``RFairLock``): waiters get it
        in the order they asked, across clients and processes."""
        return Lock(self, name, kind="fair", on_lost=on_lost, holder_id=holder_id)

    def read_write_lock(
        self, name: str, on_lost: OnLost | None = None, *, holder_id: int | None = None
    ) -> ReadWriteLock:
        """A read-write lock on ``name`` (Redisson ``RReadWriteLock``): many readers
        or one writer. Its sides :meth:`ReadWriteLock.read_lock` and
        :meth:`ReadWriteLock.write_lock` are :class:`Lock` objects whose holder is
        (this read-write lock, thread) on both sides. ``on_lost`` and ``holder_id``
        as in :meth:`lock`, for both sides."""
        ids = None if holder_id is not None else _ThreadIds(self._native)
        read = Lock(self, name, kind="read", on_lost=on_lost, holder_id=holder_id, caller_ids=ids)
        write = Lock(self, name, kind="write", on_lost=on_lost, holder_id=holder_id, caller_ids=ids)
        return ReadWriteLock(read, write, name, self)

    def election(self, name: str, on_lost: Callable[..., object] | None = None, *, label: str | None = None) -> Election:
        """A new candidate in the leader election ``name`` (:class:`Election`): the
        fenced lock of that name, for this candidate alone.

        ``on_lost(election, reason)`` (or ``on_lost(election)``) is called from a
        background thread when a leadership of it is lost; ``label`` names it in its
        leader note (600 bytes at most)."""
        return Election(self, name, on_lost, label)

    def semaphore(self, name: str) -> Semaphore:
        """The semaphore ``name`` (Redisson ``RSemaphore``): permits that are nobody's."""
        return Semaphore(self, name)

    def permit_expirable_semaphore(self, name: str) -> PermitExpirableSemaphore:
        """The permit-expirable semaphore ``name`` (Redisson
        ``RPermitExpirableSemaphore``): permits with ids and optional leases."""
        return PermitExpirableSemaphore(self, name)

    def count_down_latch(self, name: str) -> CountDownLatch:
        """The count-down latch ``name`` (Redisson ``RCountDownLatch``)."""
        return CountDownLatch(self, name)

    def synchronized(
        self,
        name: str,
        *,
        timeout: float | None = None,
        lease: float | None = None,
        fenced: bool = False,
        min_hold: float | None = None,
    ) -> Callable[[Callable[_P, _R]], Synchronized[_P, _R, Lock]]:
        """A decorator that runs the function while holding lock ``name`` (pottery's
        ``synchronize``)::

            @client.synchronized("reports:nightly", timeout=5.0)
            def nightly() -> None: ...

        Each call acquires (waiting at most ``timeout`` seconds; None waits as long
        as it takes, 0 tries once) and releases when the function returns or
        raises. Not acquired in time: :class:`LockTimeoutError` (the function does
        not run). ``lease`` (seconds) as in :meth:`Lock.acquire`; ``fenced=True``
        takes a fenced lock (``wrapped.lock.token`` inside). One lock object per
        decorated function: re-entrant within a thread, so the function may
        recurse. For ``async def`` functions use
        :meth:`ferrolock.aio.Client.synchronized` (TypeError here).

        ``min_hold`` (seconds) keeps the lock at least that long after the acquire,
        also when the function returns (or raises) sooner: with ``timeout=0`` on
        every host of a job scheduled everywhere, the job runs once per tick when
        ``min_hold`` is longer than the hosts' clock skew and shorter than the
        period minus it (the others get :class:`LockTimeoutError`)::

            @client.synchronized("reports:nightly", timeout=0, min_hold=60)
            def nightly() -> None: ...
        """
        _check_hold_options(timeout, lease)
        check_seconds(min_hold, "min_hold", warn_long=True)
        lock = self.fenced_lock(name) if fenced else self.lock(name)

        def decorate(fn: Callable[_P, _R]) -> Synchronized[_P, _R, Lock]:
            if inspect.iscoroutinefunction(fn):
                raise TypeError(
                    f"{fn.__qualname__} is an async function: use ferrolock.aio.Client.synchronized for it"
                )

            @functools.wraps(fn)
            def synchronized(*args: _P.args, **kwargs: _P.kwargs) -> _R:
                with lock.hold(timeout=timeout, lease=lease, min_hold=min_hold):
                    return fn(*args, **kwargs)

            synchronized.lock = lock  # type: ignore[attr-defined]
            wrapped: Synchronized[_P, _R, Lock] = synchronized  # type: ignore[assignment]
            return wrapped

        return decorate

    def close(self) -> None:
        """Releases every lock this client still holds (including holds left by
        ended threads and dropped lock objects), stops the watchdog and closes the
        connections. Later calls raise :class:`ClientClosedError`; closing again
        does nothing."""
        try:
            self._native.close()
        finally:
            self._held.clear()

    def _exit(self) -> None:
        self.close()


# ---------------------------------------------------------------------------
# The objects a blocking Client makes: each one the shared base (below) bound
# to this Client, with its blocking calls.


OnLost = OnLostCallback["Lock"]
"""Type of an ``on_lost`` callback: ``on_lost(lock, reason)`` or ``on_lost(lock)``,
called from a background thread when a hold is lost. ``reason`` says why (e.g.
``"its lease (5000 ms) ran out before it was renewed or released"``); inside it,
``lock.lost`` is True and ``lock.lost_event`` is set for the hold that was lost."""


class Lock(_LockBase["Client"], _ThreadHeld):
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

    def acquire(self, blocking: bool = True, timeout: float | None = -1, *, lease: float | None = None) -> bool:
        """Acquires the lock for the calling thread, with :class:`threading.RLock` semantics.

        ``timeout`` -1 or None waits as long as it takes; ``blocking=False`` tries
        once. Returns False if not acquired in time. ``lease`` (seconds) makes the
        lock expire after it with no renewal; None renews it with the watchdog
        while held. The GIL is released while waiting, and Ctrl-C interrupts the
        wait (leaving nothing held).
        """
        return self._acquire(blocking, timeout, lease)

    def release(self) -> None:
        """Releases one level of the calling thread's hold.

        Raises :class:`NotOwnedError` if this thread does not hold the lock through
        this object, and :class:`LockLostError` if its hold was lost meanwhile.
        """
        self._release()

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

    def set_holder_info(self, info: str | None) -> None:
        """Shows ``info`` (up to 1024 bytes; None removes it) next to the calling
        thread's hold in :meth:`status` and ``ferrolock status`` (Redisson ignores
        it). It expires with the lease as it is now: call again after the watchdog
        renewed the lease to keep it. :class:`NotOwnedError` if the thread does not
        hold the lock through this object."""
        self._slot().holder.set_holder_info(info)

    def status(self) -> LockStatus:
        """The lock as the server sees it, in one round trip: holders (owner field,
        hold count, info), seconds left on the lease, clients waiting on it and
        the last fencing token (see :class:`LockStatus`)."""
        return LockStatus._from_native(self._probe.status())


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


class Election(_ElectionBase["Client"], _Scoped):
    """A candidate in the leader election ``name``: :meth:`Client.election`.

    ``campaign()`` waits (on pub/sub, as an acquire does) until this candidate
    leads and gives its :class:`Leadership` (its :attr:`~Leadership.term`, and
    :attr:`~Leadership.lost` / :attr:`~Leadership.lost_event` if it is lost);
    ``resign()`` lets the next candidate lead at once. ``with election:`` campaigns
    and resigns at the end; ``leader()`` says who leads now and ``observe()``
    yields every change. Leadership also ends when the client closes.

    Built on the fenced lock of ``name``: a Redisson ``RLock`` or ``RFencedLock``
    of that name excludes the candidates and is excluded by a leader."""

    @overload
    def campaign(self, timeout: None = None) -> Leadership: ...
    @overload
    def campaign(self, timeout: float) -> Leadership | None: ...
    def campaign(self, timeout: float | None = None) -> Leadership | None:
        """Waits until this candidate leads (at most ``timeout`` seconds; None: as long
        as it takes, 0: one try) and returns its leadership, or None when another led
        all along. :class:`InvalidArgumentError` if it leads already."""
        check_seconds(timeout, "timeout", warn_long=True)
        return self._led(self._native.campaign(timeout))

    def resign(self) -> bool:
        """Ends this candidate's leadership: True if it led, False if it did not."""
        leadership = self._leadership
        resigned = self._native.resign()
        if leadership is not None:
            self._ended(leadership)
        return resigned

    def leader(self) -> Leader | None:
        """Who leads now (one read), or None."""
        return _leader(self._native.leader())

    def observe(self) -> Observer:
        """An :class:`Observer` of this election, subscribed from now on:
        ``for leader in election.observe(): ...`` gets who leads now, then each change."""
        return Observer(self._native.observe())

    def _enter(self) -> None:
        self.campaign()

    def _exit(self) -> None:
        self.resign()
