"""What the status and metrics queries return: small frozen dataclasses built
from the native extension's plain tuples and dicts."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

__all__ = ["HolderEntry", "LockStatus", "Inspection", "PermitOut", "Histogram", "Metrics"]


@dataclass(frozen=True)
class HolderEntry:
    """One holder of a lock as the server sees it, with its note: who it is
    (app, host, pid, thread or task) and since when it holds. A note is written
    by the holder's client once the hold outlives the client's
    ``holder_note_after`` (the ``holder_notes`` option, see :class:`Client`): a
    short hold, or a client with notes off (or Redisson), leaves only the owner
    field and the count.

    Also what :attr:`LockTimeoutError.holder` gives: who held the lock when an
    acquire gave up waiting."""

    owner: str
    """The owner field: ``<client id>:<holder id>`` for ferrolock, ``<uuid>:<thread id>`` for Redisson."""
    count: int
    """How many times that holder has entered the lock."""
    info: str | None = None
    """The holder's note as stored (a JSON object written by its client, or the
    text set with ``lock.set_holder_info()``), if any."""
    app: str | None = None
    """The holder client's ``app_name``."""
    host: str | None = None
    """The holder's host name."""
    pid: int | None = None
    """The holder's process id."""
    thread: str | None = None
    """The holder's thread name (Python: the thread, or the asyncio task, that
    acquired; Node and C: their label)."""
    command: str | None = None
    """What the holder runs (``ferrolock run``: its command)."""
    renewed: bool | None = None
    """True when the holder's watchdog renews the hold (no explicit lease)."""
    since_ms: int | None = None
    """When the hold began, in Unix milliseconds by the Redis server's clock."""
    held_for: float | None = None
    """Seconds the lock has been held, by the server's clock (from the note)."""
    description: str = field(default="", compare=False)
    """The holder for people, e.g. ``"billing on host-7 pid 4242 (thread
    worker-3) for 5 m 12 s"`` (its owner field when it left no note). Made from
    the other fields, so equality ignores it."""

    @classmethod
    def _from_native(cls, raw: tuple[Any, ...]) -> HolderEntry:
        owner, count, info, note, held_for, description = raw
        app, host, pid, thread, command, renewed, since_ms = note if note is not None else (None,) * 7
        return cls(owner, count, info, app, host, pid, thread, command, renewed, since_ms, held_for, description)


@dataclass(frozen=True)
class LockStatus:
    """A lock at one moment, as the server sees it (``lock.status()``), what
    ``ferrolock status`` shows."""

    name: str
    """The lock name."""
    holders: tuple[HolderEntry, ...]
    """Every holder with its hold count and note (several only for read locks;
    empty when the lock is free)."""
    remaining_lease: float | None
    """Seconds left on the lease; None when free, ``inf`` for a lock without expiry."""
    subscribers: int
    """Clients subscribed to the lock's release channel: one per client with
    waiters (ferrolock and Redisson share one subscription per client)."""
    last_token: int | None
    """The last fencing token handed out for this name, if any."""
    eviction_policy: str | None
    """The server's ``maxmemory-policy`` when it may evict lock keys (``maxmemory``
    set and a policy other than ``noeviction``: a held lock could vanish under memory
    pressure; set ``noeviction``). None when it cannot, or its ACL refuses INFO. Read
    once when the client connected."""

    @property
    def locked(self) -> bool:
        """True when someone holds the lock."""
        return bool(self.holders)

    @classmethod
    def _from_native(cls, raw: tuple[str, list[tuple[Any, ...]], float | None, int, int | None, str | None]) -> LockStatus:
        name, holders, remaining, subscribers, last_token, eviction_policy = raw
        return cls(
            name=name,
            holders=tuple(HolderEntry._from_native(h) for h in holders),
            remaining_lease=remaining,
            subscribers=subscribers,
            last_token=last_token,
            eviction_policy=eviction_policy,
        )


@dataclass(frozen=True)
class PermitOut:
    """A permit of a permit-expirable semaphore that is out."""

    id: str
    """Its id (32 hex digits)."""
    lease_left: float | None
    """Seconds left on its lease by this machine's clock (negative: expired, back
    at the next acquire); None: no lease."""


@dataclass(frozen=True)
class Inspection:
    """What a name is, told from its keys, and what is going on there
    (``client.inspect(name)``), what ``ferrolock status`` and ``ferrolock top`` show."""

    name: str
    """The name."""
    kind: str
    """``"lock"``, ``"fenced_lock"``, ``"fair_lock"``, ``"read_write_lock"``,
    ``"semaphore"``, ``"permit_expirable_semaphore"``, ``"count_down_latch"``, or
    ``"semaphore_or_latch"`` (a number nothing waits on: nothing tells which)."""
    holders: tuple[HolderEntry, ...]
    """A lock's holders with their notes (who, since when); empty when free or not a lock."""
    lease_left: float | None
    """Seconds left on a held lock's lease; None when free or not a lock, ``inf`` without expiry."""
    waiters: int
    """Clients waiting: a fair lock's queue length; otherwise the clients subscribed
    to its channel (one per client with waiters; a client stays subscribed 100 ms
    after its last waiter left)."""
    queue: tuple[str, ...]
    """A fair lock's waiting owner fields, first first."""
    mode: str | None
    """A read-write lock's side that holds it (``"read"`` or ``"write"``); None when free."""
    permits: int | None
    """A semaphore's free permits (also set for ``semaphore_or_latch``)."""
    permits_out: tuple[PermitOut, ...]
    """A permit-expirable semaphore's permits that are out."""
    count: int | None
    """A count-down latch's count (also set for ``semaphore_or_latch``)."""
    last_token: int | None
    """The last fencing token handed out for this name, if any."""
    eviction_policy: str | None
    """The server's ``maxmemory-policy`` when it may evict the name's keys (see
    :attr:`LockStatus.eviction_policy`); None when it cannot."""

    @property
    def locked(self) -> bool:
        """True when a lock has holders."""
        return bool(self.holders)

    @classmethod
    def _from_native(cls, raw: tuple[Any, ...]) -> Inspection:
        name, kind, holders, lease, waiters, queue, mode, permits, out, count, last_token, eviction_policy = raw
        return cls(
            name=name,
            kind=kind,
            holders=tuple(HolderEntry._from_native(h) for h in holders),
            lease_left=lease,
            waiters=waiters,
            queue=tuple(queue),
            mode=mode,
            permits=permits,
            permits_out=tuple(PermitOut(i, left) for i, left in out),
            count=count,
            last_token=last_token,
            eviction_policy=eviction_policy,
        )


@dataclass(frozen=True)
class Histogram:
    """Observations in seconds, by bucket. ``counts[i]`` counts the observations
    ``<= bounds[i]`` and ``> bounds[i-1]`` (not cumulative); ``counts`` has one
    more entry than ``bounds``, the last for everything above the last bound."""

    bounds: tuple[float, ...]
    """Upper bounds of the buckets, in seconds, ascending."""
    counts: tuple[int, ...]
    """Observations per bucket: one more entry than ``bounds`` (the last is above every bound)."""
    sum: float
    """Sum of every observation, in seconds."""
    count: int
    """Number of observations."""

    @classmethod
    def _from_native(cls, raw: dict[str, Any]) -> Histogram:
        return cls(tuple(raw["bounds"]), tuple(raw["counts"]), float(raw["sum"]), int(raw["count"]))

    def quantile(self, q: float) -> float:
        """The upper bound of the bucket that holds quantile ``q`` (0 to 1); ``inf``
        if it is in the last bucket, ``nan`` without observations."""
        if self.count == 0:
            return math.nan
        seen = 0
        for bound, n in zip(self.bounds, self.counts):
            seen += n
            if seen >= q * self.count:
                return bound
        return math.inf


@dataclass(frozen=True)
class Metrics:
    """A snapshot of one client's metrics (``client.metrics()``). Counters count
    since the client connected; ``client.metrics_text()`` renders the same in the
    Prometheus text format (names ``ferrolock_*``, label ``client``)."""

    client_id: str
    """The client these counters belong to (the ``client`` label in ``metrics_text()``)."""
    acquired: int
    """Acquires that acquired."""
    not_acquired: int
    """Acquires that gave up: their wait ran out."""
    failed: int
    """Acquires that raised (connection, permission, ...)."""
    cancelled: int
    """Acquires that were cancelled or interrupted."""
    wait: Histogram
    """Seconds from an acquire call to its outcome, every outcome."""
    hold: Histogram
    """Seconds from acquisition to release or loss."""
    holds_now: int
    """Locks held now."""
    waiters_now: int
    """Acquire calls waiting for a release now."""
    renewals: int
    """Watchdog renewals of held locks."""
    renewal_failures: int
    """Renewal calls that failed (the hold is kept until its deadline and retried)."""
    losses: int
    """Holds lost."""
    reconnects: int
    """Connections made again after one broke or stalled (commands and messages)."""
    failovers_noticed: int
    """Failovers this client noticed (Sentinel's ``+switch-master``, a reconnect onto
    another or a restarted master, a cluster slot that changed masters); each makes
    it check every hold at once."""
    failover_loss_report: Histogram
    """Seconds from noticing a failover to reporting a hold it lost, per hold lost."""

    @classmethod
    def _from_native(cls, raw: dict[str, Any]) -> Metrics:
        fields = dict(raw)
        fields["wait"] = Histogram._from_native(raw["wait"])
        fields["hold"] = Histogram._from_native(raw["hold"])
        fields["failover_loss_report"] = Histogram._from_native(raw["failover_loss_report"])
        return cls(**fields)
