"""Clients: what :class:`Client` and its asyncio twin :class:`ferrolock.aio.Client`
share (:class:`_ClientBase`), and the blocking :class:`Client`."""

from __future__ import annotations

from typing import Any, ClassVar

from . import _native
from ._holds import _HeldLocks, logger
from ._lock import Lock, OnLost
from ._scope import _Scoped

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
    "replica_ack_timeout",
)
"""The arguments of :class:`Client` and :meth:`ferrolock.aio.Client.connect`, as
the native ``connect`` and ``connect_async`` take them."""


def _connect_options(arguments: dict[str, Any]) -> dict[str, Any]:
    """The native connect's keyword arguments, picked from ``arguments``: the
    ``locals()`` of :class:`Client` or :meth:`ferrolock.aio.Client.connect`."""
    return {name: arguments[name] for name in _CONNECT_OPTIONS}


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

    @property
    def id(self) -> str:
        """This client's id (UUID v4), the first half of every owner field it writes."""
        return self._native.id

    @property
    def watchdog_timeout(self) -> float:
        """Lease of watchdog-renewed locks, in seconds."""
        return self._native.watchdog_timeout

    def subscribed_channels(self) -> int:
        """Number of lock channels this client is subscribed to (waiting acquires)."""
        return self._native.subscribed_channels()

    def held_count(self) -> int:
        """Number of locks this client currently holds."""
        return self._native.held_count()

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

    Behind Sentinel, ``replica_ack`` (default True; it applies while the master
    has replicas) makes every acquire wait (``WAIT``) up to
    ``replica_ack_timeout`` seconds (1 ms to 600 s, default 1.0) until a replica
    has the lock; an acquire that no replica acknowledged in time is undone and
    raises :class:`NotReplicatedError` (retrying is safe). This narrows the window
    in which a failover loses a lock just taken; replication stays asynchronous,
    so it cannot close it. ``replica_ack=False`` skips the wait. Both are ignored
    outside Sentinel. Bad types raise :class:`TypeError`, bad values
    :class:`InvalidArgumentError`, naming the argument; passwords never appear in
    messages, logs or ``repr``.

    Use it as a context manager, or call :meth:`close` when done: the client
    keeps every hold that is not released (even of a garbage-collected lock
    object or of a thread that ended) until then. A client made before
    ``os.fork()`` raises :class:`InvalidArgumentError` in the child: make a new
    client there.
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
        replica_ack: bool = True,
        replica_ack_timeout: float = 1.0,
    ) -> None:
        super().__init__(_native.Client.connect(**_connect_options(locals())))
        logger.debug("ferrolock client %s connected", self._native.id)

    def lock(self, name: str, on_lost: OnLost | None = None, *, holder_id: int | None = None) -> Lock:
        """A re-entrant lock on ``name`` (1 to 4096 bytes).

        ``on_lost(lock)`` is called from a background thread when a hold of this
        lock object is lost. With ``holder_id``, every thread using this object
        acts as the one holder ``<client id>:<holder_id>`` (hand-over cases).
        """
        return Lock(self, name, kind="reentrant", on_lost=on_lost, holder_id=holder_id)

    def fenced_lock(self, name: str, on_lost: OnLost | None = None, *, holder_id: int | None = None) -> Lock:
        """Like :meth:`lock`, for a fenced lock: every acquisition gets a strictly
        increasing :attr:`Lock.token` (Redisson ``RFencedLock`` compatible)."""
        return Lock(self, name, kind="fenced", on_lost=on_lost, holder_id=holder_id)

    def close(self) -> None:
        """Releases every lock this client still holds (including holds left by
        ended threads and dropped lock objects), stops the watchdog and closes the
        connections. Later calls raise :class:`LockError`."""
        try:
            self._native.close()
        finally:
            self._held.clear()
        logger.debug("ferrolock client %s closed", self._native.id)

    def _exit(self) -> None:
        self.close()
