"""Multi-locks: one lock over member locks of several clients, usually one name
on N independent Redis servers. What the blocking and the asyncio multi-locks
share (:class:`_MultiLockBase`: members, holder identity, loss reporting), and
the blocking :class:`RedLock` (a majority of the members, the Redlock algorithm)
and :class:`MultiLock` (every member).

A multi-lock has no client of its own: its holder for a thread (or task) is a
native multi-lock over its members' holders for that same thread (or task), so
acquiring it again re-enters every member, and another thread is another holder.
The lock logic (rounds, validity, quorum, loss) is the core's (``Lock::multi``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from . import _native
from ._client import Client, Lock
from ._errors import InvalidArgumentError, LockTimeoutError
from ._holds import _HeldLocks
from ._lock import OnLostCallback, _Holdable, _LockBase, _Slot, _ThreadHeld

if TYPE_CHECKING:
    from typing_extensions import Self

_M = TypeVar("_M", bound="_LockBase[Any]")


class _MultiLockBase(_Holdable, Generic[_M]):
    """What the blocking and the asyncio multi-locks share.

    Subclasses say which locks they take (``_MEMBER``, a blocking or an asyncio
    lock class), what quorum they need (``_QUORUM``: ``"majority"`` or
    ``"all"``), and how a caller finds its slot (:class:`ferrolock._lock._ThreadHeld`,
    :class:`ferrolock.aio._TaskHeld`)."""

    _QUORUM: ClassVar[str]
    """The native quorum: ``"majority"`` or ``"all"``."""
    _MEMBER: ClassVar[type[_LockBase[Any]]]
    """The class every member must be an instance of."""
    _OTHER_FLAVOUR: ClassVar[str]
    """The twin class to use for the other flavour of locks, for messages."""

    def __init__(self, locks: Iterable[_M], *, on_lost: OnLostCallback[Self] | None = None) -> None:
        members = self._check_members(locks)
        super().__init__(on_lost)
        self._members: tuple[_M, ...] = tuple(members)
        # Every member client keeps this object alive while it holds.
        helds: list[_HeldLocks] = []
        for member in members:
            for held in member._helds:
                if not any(h is held for h in helds):
                    helds.append(held)
        self._helds = tuple(helds)
        self._owned_clients: list[Any] = []
        # Lets the core check the members now (one client and name twice); names it.
        self._probe = _native.Holder.multi([m._probe for m in members], self._QUORUM)

    def _check_members(self, locks: Iterable[_M]) -> list[_M]:
        """The members as a list, or TypeError / InvalidArgumentError saying what is wrong."""
        cls = self._PUBLIC_NAME
        if isinstance(locks, (_LockBase, _MultiLockBase)) or isinstance(locks, (str, bytes)):
            raise TypeError(f"{cls} takes a list of locks (one per client), got a {type(locks).__name__}")
        try:
            members = list(locks)
        except TypeError:
            raise TypeError(f"{cls} takes a list of locks (one per client), got {type(locks).__name__}") from None
        if not members:
            raise InvalidArgumentError(f"{cls} needs at least one member lock")
        member_cls = self._MEMBER
        for i, member in enumerate(members, 1):
            if isinstance(member, _MultiLockBase):
                raise TypeError(f"{cls}: member {i} is a {member._PUBLIC_NAME}; members must be single locks")
            if not isinstance(member, member_cls):
                public = getattr(type(member), "_PUBLIC_NAME", type(member).__name__)
                if isinstance(member, _LockBase):
                    raise TypeError(
                        f"{cls}: member {i} is a {public}; {cls} takes {member_cls._PUBLIC_NAME} objects "
                        f"(do not mix blocking and asyncio locks; for {public} objects use {self._OTHER_FLAVOUR})"
                    )
                raise TypeError(f"{cls}: member {i} is a {public}, not a {member_cls._PUBLIC_NAME}")
            for j, other in enumerate(members[: i - 1], 1):
                if other is member:
                    raise InvalidArgumentError(
                        f'{cls}: lock "{member.name}" is member {j} and member {i}; each member must be '
                        "another lock (usually the same name on another client)"
                    )
        return members

    def _new_holder(self) -> tuple[_native.Holder, Sequence[_native.Holder]]:
        """A native multi-lock over each member's holder for this caller."""
        members = [m._slot().holder for m in self._members]
        return _native.Holder.multi(members, self._QUORUM), members

    def _timed_out(self, timeout: float | None) -> LockTimeoutError:
        return self._timeout_error(
            f'{self._PUBLIC_NAME} "{self.name}" was not acquired within {timeout} s: '
            f"fewer than {self.quorum} of its {len(self._members)} members could be taken",
            timeout,
        )

    def _set_label(self, slot: _Slot, label: str) -> None:
        """Each member's holder for the caller keeps its own label (a member may
        also be acquired alone): the multi-lock's slot keeps none, so every acquire
        asks the members, each calling into the core only when its label changed."""
        for member in self._members:
            member_slot = member._slot()
            if member_slot.label != label:
                member._set_label(member_slot, label)

    # -- properties ------------------------------------------------------------

    @property
    def members(self) -> tuple[_M, ...]:
        """The member locks, in the order they are taken. Ask them for what Redis
        knows (``locked()``, ``remaining_lease()``, ...): a multi-lock has no state
        of its own in Redis."""
        return self._members

    @property
    def quorum(self) -> int:
        """How many members must be held: N/2+1 for a :class:`RedLock`, N for a
        :class:`MultiLock`."""
        needed = self._probe.quorum
        assert needed is not None
        return needed

    @property
    def name(self) -> str:
        """The members' names joined by ``","``."""
        return self._probe.name

    @property
    def lost(self) -> bool:
        """True if the caller's (thread's or task's) current hold was lost: fewer
        than :attr:`quorum` members are still held (until it acquires again)."""
        holder = self._current()
        return holder is not None and holder.lost

    @property
    def token(self) -> int | None:
        """Always None: fencing tokens are per server and do not compose."""
        return None

    def local_hold_count(self) -> int:
        """The caller's (thread's or task's) hold count, as known locally (no
        round-trip; 0 when it does not hold)."""
        holder = self._current()
        return 0 if holder is None else holder.local_hold_count()

    def __repr__(self) -> str:
        return f"<{self._PUBLIC_NAME} {self.name!r} ({self.quorum} of {len(self._members)} members)>"


class _BlockingMultiLock(_MultiLockBase[Lock], _ThreadHeld):
    """A blocking multi-lock: :class:`RedLock` and :class:`MultiLock`."""

    _MEMBER = Lock
    _OTHER_FLAVOUR = "ferrolock.aio"

    @classmethod
    def connect(
        cls,
        urls: Iterable[str],
        name: str,
        *,
        on_lost: OnLostCallback[Self] | None = None,
        **client_options: Any,
    ) -> Self:
        """Connects one :class:`Client` per URL (one per independent Redis server,
        ``client_options`` as :class:`Client` takes them) and makes this lock over
        lock ``name`` on each. :meth:`close` closes those clients. Every server must
        answer now: a server that is down raises :class:`ConnectionError` (and the
        clients already made are closed)."""
        clients: list[Client] = []
        try:
            for url in _urls(urls, cls._PUBLIC_NAME):
                clients.append(Client(url, **client_options))
            multi = cls([c.lock(name) for c in clients])
        except BaseException:
            for c in clients:
                c.close()
            raise
        multi._on_lost = on_lost
        multi._owned_clients = list(clients)
        return multi

    def close(self) -> None:
        """Closes the clients :meth:`connect` made (releasing whatever they hold); a
        no-op for a lock made from existing locks (close their clients instead)."""
        clients, self._owned_clients = self._owned_clients, []
        errors: list[BaseException] = []
        for c in clients:
            try:
                c.close()
            except Exception as e:  # close the others, then raise the first
                errors.append(e)
        if errors:
            raise errors[0]

    def acquire(self, blocking: bool = True, timeout: float | None = -1, *, lease: float | None = None) -> bool:
        """Acquires the lock for the calling thread: :attr:`quorum` of its members
        (see :class:`RedLock` for how), with :class:`threading.RLock` semantics.

        ``timeout`` -1 or None waits as long as it takes; ``blocking=False`` makes
        one round. Returns False if not acquired in time. ``lease`` (seconds) makes
        every member expire after it with no renewal; None renews them with their
        clients' watchdogs. Raises (at once) when so many members fail (server down,
        refused) that the quorum is out of reach, e.g. :class:`ConnectionError`; the
        members it took are released again. Ctrl-C interrupts the wait, leaving
        nothing held.
        """
        return self._acquire(blocking, timeout, lease)

    def release(self) -> None:
        """Releases one level of the calling thread's hold on every member it took.

        :class:`NotOwnedError` if this thread does not hold the lock; a
        :class:`MultiLock` also raises it when a member was not held any more, a
        :class:`RedLock` only when fewer than :attr:`quorum` members were released.
        :class:`LockLostError` if the hold was lost meanwhile (the members are
        released all the same).
        """
        self._release()


def _urls(urls: Iterable[str], cls: str) -> list[str]:
    """``urls`` as a list of strings, or TypeError (a single URL string is a mistake)."""
    if isinstance(urls, (str, bytes)):
        raise TypeError(f"{cls}.connect takes a list of URLs (one per Redis server), got a single string")
    out = list(urls)
    for u in out:
        if not isinstance(u, str):
            raise TypeError(f"{cls}.connect: URLs must be strings, got {type(u).__name__}")
    return out


class RedLock(_BlockingMultiLock):
    """The Redlock algorithm: one lock over member locks on N independent Redis
    servers, held while a majority (N/2+1) of them are. Redisson's
    ``RedissonRedLock`` over the same names and servers excludes it.

    Made from existing locks, one per client (one client per server), usually of
    the same name: ``ferrolock.RedLock([a.lock("jobs"), b.lock("jobs"), c.lock("jobs")])``,
    or by :meth:`connect`. It behaves like a :class:`Lock`: re-entrant per
    (this object, thread) through its members' holders for that thread, ``with``,
    :meth:`hold`, :attr:`lost`, :attr:`lost_event`, :meth:`extend` /
    :meth:`reacquire`, and ``on_lost(lock, reason)`` (called from a background
    thread once fewer than the quorum of members are held), and no
    :attr:`token`.

    An acquire takes the members in order, each waiting at most the remaining
    wait / N; a round that falls short releases what it took and tries again
    after a random pause until the wait ends. A hold counts only if ``lease -
    time spent acquiring - drift`` is left. Use an odd N >= 3; see the README
    ("Redlock and MultiLock") for when Redlock is not safe.

    :class:`TypeError` for members that are not :class:`Lock` objects (or mix in
    :class:`ferrolock.aio.Lock` objects); :class:`InvalidArgumentError` for no
    member, or one lock (client and name) twice.
    """

    _PUBLIC_NAME = "ferrolock.RedLock"
    _QUORUM = "majority"


class MultiLock(_BlockingMultiLock):
    """One lock over several member locks (several names, or one name on several
    servers) held only while every member is: Redisson's ``RedissonMultiLock``.

    Like :class:`RedLock` otherwise, except that each member may wait the whole
    remaining wait, and :meth:`release` raises :class:`NotOwnedError` if any member
    was no longer held."""

    _PUBLIC_NAME = "ferrolock.MultiLock"
    _QUORUM = "all"
