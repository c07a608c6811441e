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

Log records go to the ``logging`` logger ``"ferrolock"`` (lost locks, and
threads or tasks that end while holding, are reported there as warnings).
"""

# The package: this facade; _client.py, _lock.py and _multi.py (each concept's
# base class, shared with its asyncio twin, and the blocking classes); aio.py (the asyncio
# classes on the same bases); _holds.py (the lock objects a client keeps alive
# while they hold); _scope.py (``with`` and ``async with``); _errors.py; and _native, the Rust extension (src/: one
# Client and one Holder class, each call as `x` and its asyncio twin `x_async`).

from __future__ import annotations

import atexit

from . import _errors, _native
from ._client import Client
from ._errors import *  # every exception class: _errors.__all__
from ._holds import logger
from ._lock import Lock, OnLost
from ._multi import MultiLock, RedLock

__all__ = ["Client", "Lock", "MultiLock", "OnLost", "RedLock", "logger"]
__all__ += _errors.__all__

__version__ = "0.1.0"

# Shown as ferrolock.Client / ferrolock.Lock, where they have always been.
Client.__module__ = Lock.__module__ = RedLock.__module__ = MultiLock.__module__ = __name__

# Background threads may still be handing a result or a callback to Python when
# the program ends; let them leave the interpreter before it finalizes.
atexit.register(_native.quiesce, 2.0)
