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

The URL names one server (``redis://``, ``rediss://``), the master of a Redis
Sentinel deployment (``redis+sentinel://host:port[,host:port...]/<master name>``)
or a Redis Cluster (``redis+cluster://host:port[,host:port...]``); see
:class:`Client`. Behind Sentinel an acquire waits for a replica to acknowledge it
(``replica_ack``) and raises :class:`NotReplicatedError` when none does in time.

A hold ends only when it is released (``release()`` or leaving a ``with``
block), when its explicit lease ends, or when the client is closed (or dropped
entirely, or the process exits): never because a lock object is
garbage-collected or because the thread that holds it ends. The client keeps
the lock objects that hold alive, so ``if client.lock("nightly").acquire(blocking=False): ...``
keeps the lock until :meth:`Client.close`, and their ``on_lost`` still fires.

:class:`RedLock` (a majority of N independent servers, the Redlock algorithm) and
:class:`MultiLock` (every member) are one lock over locks of several clients::

    redlock = ferrolock.RedLock.connect(["redis://a:6379", "redis://b:6379", "redis://c:6379"], "jobs")
    with redlock:
        ...
    redlock.close()

Log records go to the ``logging`` logger ``"ferrolock"`` and its children by
module (the core's events: reconnects at INFO, renewal failures and lost locks
at WARNING, connect details at DEBUG; threads or tasks that end while holding are
warnings on ``"ferrolock"``).

The rest of Redisson's family, on the same client::

    fair = client.fair_lock("jobs")             # a Lock, granted in order of arrival
    rw = client.read_write_lock("config")
    with rw.read_lock(): ...                    # many readers or one writer (Locks)
    sem = client.semaphore("gpu")               # threading.Semaphore-like, not owned
    sem.try_set_permits(4)
    with sem: ...                               # one permit
    ps = client.permit_expirable_semaphore("api-quota")
    permit = ps.acquire(timeout=5.0, lease=60.0)  # a ferrolock.Permit (or None)
    latch = client.count_down_latch("ready")    # try_set_count / count_down / wait

Leader election on a lock (one leader among N replicas; terms are fencing tokens)::

    election = client.election("scheduler")
    with election.campaign() as leadership:    # waits until this replica leads
        run_scheduler(term=leadership.term)    # stop when leadership.lost_event is set
    election.leader()                          # who leads now: a ferrolock.Leader
    for leader in election.observe(): ...      # who leads, then every change

Conveniences: ``@client.synchronized(name, timeout=...)`` runs a function
holding a lock; ``lock.lost_event`` (and ``await lock.wait_lost()`` in
:mod:`ferrolock.aio`) signals a lost hold; ``lock.extend()`` /
``lock.reacquire()`` change an explicit lease; ``lock.status()``,
``client.metrics()`` and ``client.metrics_text()`` show what the locks do. A
client made before ``os.fork()`` works in the child (it connects again there);
a closed one raises :class:`ClientClosedError`.
"""

# The package: this facade; _base.py, _lock.py, _family.py, _election.py and _multi.py
# (each concept's base class, shared with its asyncio twin); _client.py (the blocking
# Client and the objects it makes, on those bases); aio.py (the asyncio ones, on the same
# bases): a client module imports the bases, never the other way; _holds.py (the lock objects a client keeps alive
# while they hold); _scope.py (``with`` and ``async with``); _errors.py; and _native, the Rust extension (src/: one
# Client and one Holder class, each call as `x` and its asyncio twin `x_async`).

from __future__ import annotations

import atexit

from . import _errors, _native
from ._client import Client, CountDownLatch, Election, Lock, OnLost, PermitExpirableSemaphore, ReadWriteLock, Semaphore
from ._errors import *  # every exception class: _errors.__all__
from ._holds import logger
from ._client import Synchronized
from ._election import Leader, Leadership, Observer
from ._family import Permit
from ._lock import LostEvent
from ._multi import MultiLock, RedLock
from ._status import Histogram, HolderEntry, Inspection, LockStatus, Metrics, PermitOut

__all__ = [
    "Client",
    "CountDownLatch",
    "Election",
    "Histogram",
    "HolderEntry",
    "Inspection",
    "Leader",
    "Leadership",
    "Lock",
    "LockStatus",
    "LostEvent",
    "Metrics",
    "MultiLock",
    "Observer",
    "OnLost",
    "Permit",
    "PermitExpirableSemaphore",
    "PermitOut",
    "ReadWriteLock",
    "RedLock",
    "Semaphore",
    "Synchronized",
    "logger",
]
__all__ += _errors.__all__

__version__: str = _native.__version__  # the workspace version in Cargo.toml

# Shown as ferrolock.Client / ferrolock.Lock, where they have always been.
for _cls in (
    Client,
    Lock,
    RedLock,
    MultiLock,
    LostEvent,
    HolderEntry,
    LockStatus,
    Histogram,
    Metrics,
    ReadWriteLock,
    Semaphore,
    Permit,
    PermitExpirableSemaphore,
    CountDownLatch,
    Election,
    Leader,
    Leadership,
    Observer,
):
    _cls.__module__ = __name__
del _cls

# Background threads may still be handing a result or a callback to Python when
# the program ends; let them leave the interpreter before it finalizes.
atexit.register(_native.quiesce, 2.0)

# The core's log events (reconnects, renewal failures, losses, ...) go to the
# logging logger "ferrolock" and its children; their delivery thread stops at exit
# before quiesce (atexit runs the later registration first).
_native.install_log_bridge()
atexit.register(_native.stop_log_bridge)
