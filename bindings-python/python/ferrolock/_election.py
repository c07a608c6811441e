"""Leader election: what the blocking :class:`Election` and its asyncio twin
:class:`ferrolock.aio.Election` share (:class:`_ElectionBase`: the candidate,
its leaderships and their loss), the observers, and :class:`Leader`. The
candidates themselves are in ``_client`` and :mod:`ferrolock.aio`, beside the
clients that make them.

One candidate is the election object itself (not a thread or task): the core's
fenced lock of the election's name, for one holder. Its term is that lock's
fencing token; its loss is told as a hold's (``on_lost``, :attr:`Leadership.lost`,
:attr:`Leadership.lost_event`)."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from . import _native
from ._args import check_seconds
from ._lock import LostEvent, _takes_reason
from ._scope import _AsyncScoped, _Scoped
from ._status import HolderEntry

if TYPE_CHECKING:
    from ._base import _ClientBase

_C = TypeVar("_C", bound="_ClientBase")

_RawLeader = tuple[int, "_native._Holder", "float | None"]
"""A leader as the native part gives it: (term, holder, lease left)."""


@dataclass(frozen=True)
class Leader:
    """Who leads an election: its term and its note (app, host, pid, label, since)."""

    term: int
    """The leadership's term: the fencing token its campaign took (larger than
    every earlier leader's). A holder that took the name with a plain Redisson
    ``RLock`` (no token) shows the latest term handed out."""
    holder: HolderEntry
    """Who it is (owner field, note, how long it has led; :attr:`HolderEntry.held_for`
    is None when the change was told by the new leader's announcement)."""
    lease_left: float | None
    """Seconds left on its lease when read or announced (None: no expiry)."""

    @property
    def description(self) -> str:
        """``"term 7: billing on host-7 pid 4242 (thread replica-0) for 5 s"``."""
        return f"term {self.term}: {self.holder.description}"

    @classmethod
    def _from_native(cls, raw: _RawLeader) -> Leader:
        term, holder, lease_left = raw
        return cls(term, HolderEntry._from_native(holder), lease_left)


def _leader(raw: _RawLeader | None) -> Leader | None:
    return None if raw is None else Leader._from_native(raw)


class Leadership(_Scoped, _AsyncScoped):
    """One leadership of a candidate: its :attr:`term` and whether it was lost.
    ``with`` (or ``async with``) resigns when the block ends."""

    def __init__(self, election: _ElectionBase[Any], term: int) -> None:
        self._election = election
        self.term = term
        """The term: this leadership's fencing token, larger than every earlier leader's."""
        self.lost_event = LostEvent()
        """Set when this leadership is lost (``lost_event.reason`` says why); never
        for a resignation. ``await leadership.wait_lost()`` is its asyncio form."""

    @property
    def lost(self) -> bool:
        """True once this leadership was lost (told before another candidate can lead)."""
        return self.lost_event.is_set()

    @property
    def lost_reason(self) -> str | None:
        """Why it was lost, or None."""
        return self.lost_event.reason

    def resign(self) -> bool:
        """Resigns (blocking): True, or False if it was lost meanwhile (or resigned)."""
        if self._election._leadership is not self:
            return False
        resigned = self._election._native.resign()
        self._election._ended(self)
        return resigned

    async def resign_async(self) -> bool:
        """:meth:`resign` for asyncio."""
        if self._election._leadership is not self:
            return False
        resigned = await self._election._native.resign_async()
        self._election._ended(self)
        return resigned

    async def wait_lost(self) -> str | None:
        """Waits until this leadership is lost (its reason) or ends by resignation (None)."""
        return await self.lost_event._wait(0)

    def _exit(self) -> None:
        self.resign()

    async def _aexit(self) -> None:
        await self.resign_async()

    def __repr__(self) -> str:
        return f"<ferrolock.Leadership election={self._election.name!r} term={self.term} lost={self.lost}>"


class _ElectionBase(Generic[_C]):
    """What :class:`Election` and :class:`ferrolock.aio.Election` share."""

    _PUBLIC_NAME = "ferrolock.Election"

    def __init__(
        self,
        client: _C,
        name: str,
        on_lost: Callable[..., object] | None = None,
        label: str | None = None,
    ) -> None:
        self._client = client
        self._native = client._native.election(name)
        self._on_lost = on_lost
        self._leadership: Leadership | None = None
        self._mutex = threading.Lock()
        if label is not None:
            self._native.set_label(label[:600])
        self._native.set_on_lost(self._lost)

    @property
    def client(self) -> _C:
        """The client this candidate campaigns on."""
        return self._client

    @property
    def name(self) -> str:
        """The election's name (the name of its fenced lock)."""
        return self._native.name

    @property
    def owner(self) -> str:
        """The owner field this candidate writes while it leads."""
        return self._native.owner

    @property
    def leading(self) -> bool:
        """True while this candidate leads (until it resigns or learns of a loss)."""
        return self._native.leading

    @property
    def term(self) -> int | None:
        """The term of this candidate's leadership while it leads, else None."""
        return self._native.term

    @property
    def leadership(self) -> Leadership | None:
        """This candidate's current (or latest lost) leadership, if any."""
        return self._leadership

    def _led(self, term: int | None) -> Leadership | None:
        """A campaign won ``term`` (None: it timed out)."""
        if term is None:
            return None
        leadership = Leadership(self, term)
        with self._mutex:
            self._leadership = leadership
        if self._native.term != term:
            # Lost before this object existed: the callback had nothing to tell.
            leadership.lost_event._fire(self._native.lost_reason or "lost")
        return leadership

    def _ended(self, leadership: Leadership) -> None:
        with self._mutex:
            if self._leadership is leadership:
                self._leadership = None
        leadership.lost_event._end()

    def _lost(self, message: str, reason: str) -> None:
        """The core's loss callback (a background thread)."""
        with self._mutex:
            leadership = self._leadership
        if leadership is not None:
            leadership.lost_event._fire(reason)
        callback = self._on_lost
        if callback is not None:
            if _takes_reason(callback):
                callback(self, reason)
            else:
                callback(self)

    def __repr__(self) -> str:
        return f"<{self._PUBLIC_NAME} name={self.name!r} owner={self.owner} leading={self.leading}>"


class Observer(Iterator["Leader | None"]):
    """Leadership changes of one election, in order: who leads now, then each new
    leader or ``None`` when nobody does. Woken by Redis (a new leader's
    announcement, a release) and by the current leader's lease end, never by
    polling. Changes wait for the next call; none is lost."""

    def __init__(self, native: _native.Observer) -> None:
        self._native = native

    def next(self, timeout: float | None = None) -> Leader | None:
        """The next change; :class:`TimeoutError` when none came within ``timeout``
        seconds (None: waits as long as it takes). ClientClosedError once the client closed."""
        check_seconds(timeout, "timeout", warn_long=True)
        changed, raw = self._native.next(timeout)
        if not changed:
            raise TimeoutError(f"no leadership change within {timeout} s")
        return _leader(raw)

    def __next__(self) -> Leader | None:
        return self.next()

    def __iter__(self) -> Observer:
        return self


class AsyncObserver(AsyncIterator["Leader | None"]):
    """The asyncio twin of :class:`ferrolock.Observer` (``ferrolock.aio.Observer``)."""

    def __init__(self, native: _native.Observer) -> None:
        self._native = native

    async def next(self, timeout: float | None = None) -> Leader | None:
        """The next change; :class:`TimeoutError` when none came within ``timeout``
        seconds. Cancelled, it loses no change."""
        check_seconds(timeout, "timeout", warn_long=True)
        changed, raw = await self._native.next_async(timeout)
        if not changed:
            raise TimeoutError(f"no leadership change within {timeout} s")
        return _leader(raw)

    async def __anext__(self) -> Leader | None:
        return await self.next()

    def __aiter__(self) -> AsyncObserver:
        return self
