"""Clients: what :class:`Client` and its asyncio twin :class:`ferrolock.aio.Client`
share (:class:`_ClientBase`), and the blocking :class:`Client`."""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from typing import Any, ClassVar, ParamSpec, Protocol, TypeVar

from . import _native
from ._args import check_number, check_seconds
from ._holds import _HeldLocks, logger
from ._election import Election
from ._family import CountDownLatch, PermitExpirableSemaphore, ReadWriteLock, Semaphore, _ThreadIds
from ._lock import Lock, OnLost
from ._scope import _Scoped
from ._status import Inspection, Metrics

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


class _ClientBase:
    """What :class:`Client` and :class:`ferrolock.aio.Client` share: a connected
    native client, and the lock objects of it that hold (kept alive until they
    release or the client closes)."""

    _PUBLIC_NAME: ClassVar[str]
    """The class as the user knows it, for ``repr``."""

    def __init__(self, native: _native.Client) -> None:
        """Wraps a connected native client; use ``connect`` instead."""
        self._native = native
        self._held = _HeldLocks()
        self._helds = (self._held,)
        """What every lock object of this client shares as its ``_helds``."""

    @property
    def id(self) -> str:
        """This client's id (UUID v4), the first half of every owner field it writes."""
        return self._native.id

    @property
    def watchdog_timeout(self) -> float:
        """Lease of watchdog-renewed locks, in seconds."""
        return self._native.watchdog_timeout

    def subscribed_channels(self) -> int:
        """Number of lock channels this client is subscribed to: those with waiting acquires,
        and for 100 ms those whose last waiter left. ``metrics().waiters_now`` counts the
        waiting acquires themselves."""
        return self._native.subscribed_channels()

    def held_count(self) -> int:
        """Number of locks this client currently holds."""
        return self._native.held_count()

    @property
    def closed(self) -> bool:
        """True once the client was closed: every call then raises
        :class:`ClientClosedError`."""
        return self._native.closed

    def metrics(self) -> Metrics:
        """A snapshot of this client's metrics (:class:`ferrolock.Metrics`):
        acquires by outcome, wait-time and hold-time histograms, holds and waiters
        now, renewals and their failures, losses, reconnects, failovers noticed and
        how long after each a lost hold was reported."""
        return Metrics._from_native(self._native.metrics())

    def metrics_text(self) -> str:
        """The same snapshot in the Prometheus text exposition format (metric names
        ``ferrolock_*``, label ``client="<id>"``), to serve from your own
        ``/metrics`` endpoint."""
        return self._native.metrics_text()

    def __repr__(self) -> str:
        return f"<{self._PUBLIC_NAME} id={self.id}>"


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
