"""The exception classes of ferrolock (DESIGN §4). All derive from :class:`LockError`;
each has a stable ``code`` (the same as the Node binding's ``err.code``)."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._status import HolderEntry

__all__ = [
    "LockError",
    "NotOwnedError",
    "LockLostError",
    "LockTimeoutError",
    "ConnectionError",
    "WrongTypeError",
    "InvalidArgumentError",
    "PermissionDeniedError",
    "NotReplicatedError",
    "ClientClosedError",
]


class LockError(Exception):
    """Base class of every ferrolock error; also raised as is for internal errors.

    ``code`` is a stable identifier of the kind of error (``"ERR_NOT_OWNER"``, ...):
    each subclass has its own; on a :class:`LockError` raised as is it is
    ``"ERR_INTERNAL"`` (or the code of a kind a later version adds)."""

    code: str = "ERR_INTERNAL"
    """Stable identifier of the kind of error, the same as the Node binding's ``err.code``."""


class NotOwnedError(LockError, RuntimeError):
    """Release (or extend) by a thread or task that does not hold the lock."""

    code = "ERR_NOT_OWNER"


class LockLostError(LockError):
    """The hold was lost (lease expired, force-unlocked, failover): the critical
    section was not protected since then."""

    code = "ERR_LOCK_LOST"


class LockTimeoutError(LockError, TimeoutError):
    """``lock.hold(timeout=...)`` (or ``client.synchronized(..., timeout=...)``)
    could not acquire the lock in time. :attr:`holder` says who held it then."""

    code = "ERR_NOT_ACQUIRED"

    holder: HolderEntry | None = None
    """Who held the lock when the wait ran out (read at that moment, with its
    note: app, host, pid, thread, held for, and a ``description`` for people);
    None when it was free by then, could not be read, or the acquire only tried
    once (``timeout=0``), and for semaphores and latches."""


class ConnectionError(LockError, builtins.ConnectionError):  # noqa: A001 - the name is part of the API
    """Redis could not be reached or refused us: I/O error, refused connection,
    timeout, or failed authentication (an ACL refusing a command is
    :class:`PermissionDeniedError`)."""

    code = "ERR_CONNECTION"


class WrongTypeError(LockError):
    """The key at the lock name holds something that is not a lock."""

    code = "ERR_WRONG_TYPE"


class InvalidArgumentError(LockError, ValueError):
    """Bad input: empty or oversized name, negative or absurd duration, bad URL,
    a setting out of range (``drift_factor`` outside 0 to 0.5, ``replica_ack_timeout``
    outside 1 ms to 600 s). The message names the argument, never a password."""

    code = "ERR_INVALID_ARGUMENT"


class PermissionDeniedError(LockError, PermissionError):
    """A Redis ACL refused a command, key or channel (``NOPERM``). The message names
    what was refused and the ACL rule that would allow it (e.g. ``+hincrby``)."""

    code = "ERR_PERMISSION"


class NotReplicatedError(LockError):
    """Behind Sentinel or on a Cluster: fewer of the master's replicas acknowledged
    an acquire within ``replica_ack_timeout`` than the ``replica_ack`` policy needs
    (the message names how many of how many), or the master has none, so the
    acquire was undone (a failover then could have lost the lock) and the lock was
    not taken. Retrying is safe."""

    code = "ERR_NOT_REPLICATED"


class ClientClosedError(LockError):
    """A call on a client that was closed (``client.close()``, leaving its ``with``
    block), or on a lock object made from it: ``client.lock()``, acquire,
    release, queries, and acquires that were waiting when it closed. Make a new
    client."""

    code = "ERR_CLIENT_CLOSED"


for _cls in (
    LockError,
    ClientClosedError,
    NotOwnedError,
    LockLostError,
    LockTimeoutError,
    ConnectionError,
    WrongTypeError,
    InvalidArgumentError,
    PermissionDeniedError,
    NotReplicatedError,
):
    _cls.__module__ = "ferrolock"  # shown as ferrolock.NotOwnedError in tracebacks
del _cls
