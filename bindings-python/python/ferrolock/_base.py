"""What :class:`ferrolock.Client` and :class:`ferrolock.aio.Client` share
(:class:`_ClientBase`). Below the clients and the objects they make: a lock,
semaphore or election names its client's type through it, never through the
client modules (which import them)."""

from __future__ import annotations

from typing import ClassVar

from . import _native
from ._holds import _HeldLocks
from ._status import Metrics


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
