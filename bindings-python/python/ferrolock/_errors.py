"""The exception classes of ferrolock (DESIGN §4). All derive from :class:`LockError`."""

from __future__ import annotations

import builtins

__all__ = [
    "LockError",
    "NotOwnedError",
    "LockLostError",
    "LockTimeoutError",
    "ConnectionError",
    "WrongTypeError",
    "InvalidArgumentError",
    "PermissionDeniedError",
]


class LockError(Exception):
    """Base class of every ferrolock error; also raised as is for internal errors
    and for calls on a closed client."""


class NotOwnedError(LockError, RuntimeError):
    """Release (or extend) by a thread or task that does not hold the lock."""


class LockLostError(LockError):
    """The hold was lost (lease expired, force-unlocked, failover): the critical
    section was not protected since then."""


class LockTimeoutError(LockError, TimeoutError):
    """``lock.hold(timeout=...)`` could not acquire the lock in time."""


class ConnectionError(LockError, builtins.ConnectionError):  # noqa: A001 - the name is part of the API
    """Redis could not be reached or refused us: I/O error, refused connection,
    timeout, or failed authentication (an ACL refusing a command is
    :class:`PermissionDeniedError`)."""


class WrongTypeError(LockError):
    """The key at the lock name holds something that is not a lock."""


class InvalidArgumentError(LockError, ValueError):
    """Bad input: empty or oversized name, negative or absurd duration, bad URL,
    a setting out of range (``drift_factor`` outside 0 to 0.5)."""


class PermissionDeniedError(LockError, PermissionError):
    """A Redis ACL refused a command, key or channel (``NOPERM``). The message names
    what was refused and the ACL rule that would allow it (e.g. ``+hincrby``)."""


for _cls in (
    LockError,
    NotOwnedError,
    LockLostError,
    LockTimeoutError,
    ConnectionError,
    WrongTypeError,
    InvalidArgumentError,
    PermissionDeniedError,
):
    _cls.__module__ = "ferrolock"  # shown as ferrolock.NotOwnedError in tracebacks
del _cls
