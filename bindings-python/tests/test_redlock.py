"""Multi-locks (ferrolock.RedLock / MultiLock and their asyncio twins) over three
redis-servers of their own: exclusion, re-entrancy per thread and task, servers
killed, lost holds, validation."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
import uuid
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
import redis

import ferrolock
import ferrolock.aio
from conftest import WATCHDOG, check_client_clean
from helpers import RedisServer, eventually, free_port, wait_until

N = 3
# Short, so that a killed server fails a member fast (well within a hold's validity).
FAST_FAIL: dict[str, Any] = {"response_timeout": 0.3, "connect_timeout": 0.3, "retry_window": 0.3}


def _start(n: int) -> list[RedisServer]:
    servers: list[RedisServer] = []
    try:
        for _ in range(n):
            servers.append(RedisServer().start())
    except BaseException:
        for s in servers:
            s.stop()
        raise
    return servers


def _assert_clean(servers: list[RedisServer]) -> None:
    """No lock key and no subscription left on any running server."""
    for s in servers:
        if s.proc is None:
            continue
        r = s.redis()
        try:

            def no_locks() -> bool:
                return all(k.decode().startswith(("redisson_lock_token:", "counter:")) for k in r.scan_iter(count=1000))

            wait_until(no_locks, timeout=15, what=f"no lock keys left on server {s.port}")
            assert r.pubsub_channels() == [], f"subscriptions left behind on server {s.port}"
        finally:
            r.close()


@contextlib.contextmanager
def _running(n: int) -> Iterator[list[RedisServer]]:
    """``n`` redis-servers, checked clean (:func:`_assert_clean`) and stopped at the end."""
    servers = _start(n)
    try:
        yield servers
        _assert_clean(servers)
    finally:
        for s in servers:
            s.stop()


@pytest.fixture(scope="module")
def trio() -> Iterator[list[RedisServer]]:
    """Three independent redis-servers, kept running for the module."""
    with _running(N) as servers:
        yield servers


@pytest.fixture
def doomed() -> Iterator[list[RedisServer]]:
    """Three redis-servers of this test alone (it may kill some)."""
    with _running(N) as servers:
        yield servers


class Clients:
    """Makes one ferrolock client per server (a "site"), each checked clean and closed at the end."""

    def __init__(self, servers: list[RedisServer]) -> None:
        self.servers = servers
        self.made: list[ferrolock.Client] = []

    def site(self, **options: Any) -> list[ferrolock.Client]:
        options.setdefault("watchdog_timeout", WATCHDOG)
        clients = [ferrolock.Client(s.url, **options) for s in self.servers]
        self.made += clients
        return clients

    def redlock(self, name: str, **options: Any) -> ferrolock.RedLock:
        return ferrolock.RedLock([c.lock(name) for c in self.site(**options)])

    def close(self, check: bool) -> None:
        try:
            if check:
                for c in self.made:
                    check_client_clean(c)
        finally:
            for c in self.made:
                c.close()


@pytest.fixture
def clients(trio: list[RedisServer]) -> Iterator[Clients]:
    made = Clients(trio)
    ok = False
    try:
        yield made
        ok = True
    finally:
        made.close(check=ok)


@pytest.fixture
def name() -> str:
    return f"redlock:{uuid.uuid4().hex}"


def _held_on(servers: list[RedisServer], name: str) -> list[bool]:
    """Whether the lock key exists on each server (None-safe for killed ones: False)."""
    out = []
    for s in servers:
        if s.proc is None:
            out.append(False)
            continue
        r = s.redis()
        try:
            out.append(bool(r.exists(name)))
        finally:
            r.close()
    return out


def _run_threads(threads: list[threading.Thread]) -> None:
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
        assert not t.is_alive(), "a worker thread did not finish"


# ---------------------------------------------------------------------------
# Validation and shape.


def test_validation(clients: Clients, name: str) -> None:
    a, b, c = clients.site()
    with pytest.raises(ferrolock.InvalidArgumentError, match="at least one member"):
        ferrolock.RedLock([])
    with pytest.raises(TypeError, match="list of locks"):
        ferrolock.RedLock(a.lock(name))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="list of locks"):
        ferrolock.MultiLock("abc")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="member 2 is a str"):
        ferrolock.RedLock([a.lock(name), "b"])  # type: ignore[list-item]
    lock = a.lock(name)
    with pytest.raises(ferrolock.InvalidArgumentError, match="member 1 and member 3"):
        ferrolock.RedLock([lock, b.lock(name), lock])
    # Two lock objects of one client on one name: one key on one server, twice.
    with pytest.raises(ferrolock.InvalidArgumentError, match="twice on the same client"):
        ferrolock.MultiLock([a.lock(name), a.lock(name)])
    redlock = ferrolock.RedLock([a.lock(name), b.lock(name), c.lock(name)])
    with pytest.raises(TypeError, match="members must be single locks"):
        ferrolock.MultiLock([redlock])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="single string"):
        ferrolock.RedLock.connect("redis://127.0.0.1:1", name)
    # Several names on one client make a MultiLock (Redisson's use of it).
    several = ferrolock.MultiLock([a.lock(f"{name}:1"), a.lock(f"{name}:2")])
    assert several.quorum == 2
    assert several.name == f"{name}:1,{name}:2"


def test_mixing_blocking_and_asyncio_locks(trio: list[RedisServer], name: str) -> None:
    async def main() -> None:
        async with await ferrolock.aio.Client.connect(trio[0].url) as aio_client:
            with ferrolock.Client(trio[1].url) as client:
                with pytest.raises(TypeError, match="do not mix blocking and asyncio locks"):
                    ferrolock.RedLock([client.lock(name), aio_client.lock(name)])  # type: ignore[list-item]
                with pytest.raises(TypeError, match="do not mix blocking and asyncio locks"):
                    ferrolock.aio.RedLock([aio_client.lock(name), client.lock(name)])  # type: ignore[list-item]

    asyncio.run(main())


def test_shape(clients: Clients, name: str) -> None:
    redlock = clients.redlock(name)
    assert redlock.quorum == 2
    assert redlock.name == ",".join([name] * N)
    assert len(redlock.members) == N
    assert repr(redlock) == f"<ferrolock.RedLock {redlock.name!r} (2 of 3 members)>"
    assert ferrolock.MultiLock(redlock.members).quorum == 3
    with redlock as held:
        assert held is redlock
        assert redlock.token is None
        assert redlock.local_hold_count() == 1
        assert not redlock.lost
        assert all(m.owned() for m in redlock.members)
    assert redlock.local_hold_count() == 0
    assert not any(m.locked() for m in redlock.members)


def test_five_members_need_three(name: str) -> None:
    servers = _start(5)
    made = Clients(servers)
    try:
        redlock = made.redlock(name)
        other = made.site()
        assert redlock.quorum == 3
        # Another holder takes the last 2 of 5 members: 3 are left, enough. (Busy
        # members first would use up the wait slices, and with them the validity
        # of a 1.5 s lease: the acquire would need a second round.)
        singles = [other[4].lock(name), other[3].lock(name)]
        for single in singles:
            assert single.acquire(blocking=False)
        assert redlock.acquire(timeout=5)
        assert redlock.local_hold_count() == 1
        assert [m.owned() for m in redlock.members] == [True, True, True, False, False]
        redlock.release()
        # 3 of 5 taken: the quorum is out of reach.
        singles.append(other[2].lock(name))
        assert singles[2].acquire(blocking=False)
        assert not redlock.acquire(timeout=0.3)
        assert [m.owned() for m in redlock.members] == [False] * 5
        for single in singles:
            single.release()
        made.close(check=True)
        _assert_clean(servers)
    finally:
        made.close(check=False)
        for s in servers:
            s.stop()


# ---------------------------------------------------------------------------
# Exclusion and identity.


def test_exclusion_between_redlocks_of_different_clients(clients: Clients, trio: list[RedisServer], name: str) -> None:
    first = clients.redlock(name)
    second = clients.redlock(name)
    assert first.acquire(blocking=False)
    assert _held_on(trio, name) == [True] * N
    assert not second.acquire(blocking=False)
    assert not second.acquire(timeout=0.2)
    assert second.local_hold_count() == 0
    first.release()
    assert _held_on(trio, name) == [False] * N
    assert second.acquire(blocking=False)
    assert not first.acquire(blocking=False)
    second.release()


def test_exact_counter_with_threads(clients: Clients, trio: list[RedisServer], name: str) -> None:
    # Two sites (client sets); each RedLock object shared by three threads.
    redlocks = [clients.redlock(name), clients.redlock(name)]
    counter = f"counter:{name}"
    r = trio[0].redis()
    increments = 25
    errors: list[BaseException] = []

    def work(redlock: ferrolock.RedLock) -> None:
        try:
            for _ in range(increments):
                with redlock:
                    value = int(r.get(counter) or 0)  # read ...
                    r.set(counter, value + 1)  # ... modify, write: not atomic
        except BaseException as e:  # reported below
            errors.append(e)

    try:
        _run_threads([threading.Thread(target=work, args=(rl,)) for rl in redlocks for _ in range(3)])
        assert errors == []
        assert int(r.get(counter) or 0) == 6 * increments
    finally:
        r.delete(counter)
        r.close()


def test_reentry_in_one_thread_another_thread_blocked(clients: Clients, name: str) -> None:
    redlock = clients.redlock(name)
    assert redlock.acquire()
    assert redlock.acquire(blocking=False)  # re-entry: every member re-enters
    assert redlock.local_hold_count() == 2
    assert [m.hold_count() for m in redlock.members] == [2] * N

    outcome: list[bool] = []
    t = threading.Thread(target=lambda: outcome.append(redlock.acquire(timeout=0.2)))
    _run_threads([t])
    assert outcome == [False]  # another thread is another holder

    redlock.release()
    assert redlock.local_hold_count() == 1
    assert [m.hold_count() for m in redlock.members] == [1] * N

    # A thread waiting without a bound gets it once this thread lets go.
    got = threading.Event()
    done = threading.Event()
    errors: list[BaseException] = []

    def waiter() -> None:
        try:
            with redlock:
                got.set()
        except BaseException as e:
            errors.append(e)
        finally:
            done.set()

    t = threading.Thread(target=waiter)
    t.start()
    try:
        # Parked, not just subscribed: the channel of the timed-out acquire above stays
        # subscribed 100 ms after it.
        wait_until(lambda: any(c.metrics().waiters_now > 0 for c in clients.made), what="the waiter to wait")
        assert not got.is_set()
        redlock.release()
        assert done.wait(10), "the waiting thread did not get the lock"
    finally:
        t.join(10)
    assert errors == []
    assert got.is_set()
    with pytest.raises(ferrolock.NotOwnedError):
        redlock.release()


def test_clients_keep_a_holding_redlock_alive(clients: Clients, name: str) -> None:
    redlock = clients.redlock(name)
    assert redlock.acquire()
    ref = weakref.ref(redlock)
    del redlock
    gc.collect()
    held = ref()
    assert held is not None, "a RedLock that holds was garbage-collected"
    held.release()
    del held
    gc.collect()
    assert ref() is None, "a released RedLock is still kept"


def test_hold_timeout(clients: Clients, name: str) -> None:
    first = clients.redlock(name)
    second = clients.redlock(name)
    with first.hold(timeout=1):
        with pytest.raises(ferrolock.LockTimeoutError, match="fewer than 2 of its 3 members"):
            with second.hold(timeout=0.2):
                pass


def test_multilock_needs_all_members(clients: Clients, trio: list[RedisServer], name: str) -> None:
    site = clients.site()
    other = clients.site()
    multi = ferrolock.MultiLock([c.lock(name) for c in site])
    blocker = other[2].lock(name)  # one member's key, held by someone else
    assert blocker.acquire(blocking=False)
    assert not multi.acquire(blocking=False)
    assert not multi.acquire(timeout=0.3)
    assert _held_on(trio, name) == [False, False, True]  # what a round took was given back
    # A RedLock over the same locks needs only 2 of 3.
    redlock = ferrolock.RedLock([c.lock(name) for c in clients.site()])
    assert redlock.acquire(blocking=False)
    redlock.release()
    blocker.release()
    assert multi.acquire(blocking=False)
    assert _held_on(trio, name) == [True] * N
    # A member released behind its back: MultiLock release says NotOwned.
    multi.members[1].release()
    with pytest.raises(ferrolock.NotOwnedError):
        multi.release()
    assert _held_on(trio, name) == [False] * N


def test_connect(trio: list[RedisServer], name: str) -> None:
    lost: list[ferrolock.RedLock] = []
    redlock = ferrolock.RedLock.connect([s.url for s in trio], name, on_lost=lost.append, watchdog_timeout=WATCHDOG)
    try:
        with redlock:
            assert _held_on(trio, name) == [True] * N
            assert redlock.members[0].client.watchdog_timeout == WATCHDOG
            assert len({m.client.id for m in redlock.members}) == N
            redlock.members[0].force_unlock()
            redlock.members[1].force_unlock()
            wait_until(lambda: lost == [redlock], timeout=10, what="on_lost")
            with pytest.raises(ferrolock.LockLostError):
                redlock.release()
            assert redlock.acquire(timeout=5)  # again, for the with block to release
    finally:
        redlock.close()
    assert _held_on(trio, name) == [False] * N
    with pytest.raises(ferrolock.LockError):
        redlock.members[0].locked()  # its client is closed
    redlock.close()  # closing twice is a no-op
    dead = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    with pytest.raises(ferrolock.ConnectionError):
        ferrolock.MultiLock.connect([trio[0].url, dead], name, connect_timeout=0.3)


# ---------------------------------------------------------------------------
# Servers killed, holds lost.


def test_one_of_three_killed_still_works(doomed: list[RedisServer], name: str) -> None:
    made = Clients(doomed)
    try:
        first = ferrolock.RedLock([c.lock(name) for c in made.site(**FAST_FAIL)])
        second = ferrolock.RedLock([c.lock(name) for c in made.site(**FAST_FAIL)])
        doomed[1]._kill()
        assert first.acquire(timeout=5)
        assert _held_on(doomed, name) == [True, False, True]
        assert not second.acquire(blocking=False)
        first.release()
        assert _held_on(doomed, name) == [False, False, False]
        assert second.acquire(timeout=5)
        second.release()
    finally:
        made.close(check=False)


def test_two_of_three_killed_raises_and_leaves_nothing(doomed: list[RedisServer], name: str) -> None:
    made = Clients(doomed)
    try:
        redlock = ferrolock.RedLock([c.lock(name) for c in made.site(**FAST_FAIL)])
        doomed[1]._kill()
        doomed[2]._kill()
        with pytest.raises(ferrolock.ConnectionError, match="quorum cannot be reached"):
            redlock.acquire(timeout=5)
        assert redlock.local_hold_count() == 0
        # The live first member was taken, then given back.
        assert _held_on(doomed, name) == [False, False, False]
        assert made.made[0].held_count() == 0
    finally:
        made.close(check=False)


def test_lost_when_keys_deleted_on_two_of_three(clients: Clients, trio: list[RedisServer], name: str) -> None:
    lost: list[ferrolock.RedLock] = []
    notified = threading.Event()

    def on_lost(lock: ferrolock.RedLock) -> None:
        lost.append(lock)
        notified.set()

    redlock = ferrolock.RedLock([c.lock(name) for c in clients.site()], on_lost=on_lost)
    assert redlock.acquire()
    r0, r1 = trio[0].redis(), trio[1].redis()
    try:
        r0.delete(name)
        # The first member finds its hold gone at its next renewal; one of 3 is not enough to lose it.
        wait_until(lambda: redlock.members[0].lost, timeout=10, what="the first member to be lost")
        assert not redlock.lost
        assert not notified.is_set()
        r1.delete(name)
        wait_until(lambda: redlock.lost, timeout=10, what="the redlock to be lost")
        assert notified.wait(10)
        assert lost == [redlock]
        with pytest.raises(ferrolock.LockLostError, match=r"redlock .* 2 of its members are no longer held"):
            redlock.release()  # releases the member still held all the same
        assert _held_on(trio, name) == [False] * N
        assert redlock.local_hold_count() == 0
        # It can be acquired again afterwards.
        with redlock:
            assert not redlock.lost
    finally:
        r0.close()
        r1.close()


# ---------------------------------------------------------------------------
# asyncio.


def test_asyncio(trio: list[RedisServer], name: str) -> None:
    async def site() -> list[ferrolock.aio.Client]:
        return list(
            await asyncio.gather(*(ferrolock.aio.Client.connect(s.url, watchdog_timeout=WATCHDOG) for s in trio))
        )

    async def main() -> None:
        sites = [await site(), await site()]
        try:
            first = ferrolock.aio.RedLock([c.lock(name) for c in sites[0]])
            second = ferrolock.aio.RedLock([c.lock(name) for c in sites[1]])
            assert repr(first).startswith("<ferrolock.aio.RedLock")

            # Exclusion between sites, re-entry in one task.
            async with first:
                assert await first.acquire(blocking=False)
                assert first.local_hold_count() == 2
                assert [await m.hold_count() for m in first.members] == [2] * N
                assert not await second.acquire(blocking=False)
                # Another task is another holder.
                assert not await asyncio.create_task(first.acquire(timeout=0.2))
                await first.release()
            assert _held_on(trio, name) == [False] * N

            # An exact counter with tasks of both sites.
            counter = f"counter:{name}"
            r = trio[0].redis()

            async def work(lock: ferrolock.aio.RedLock) -> None:
                for _ in range(20):
                    async with lock:
                        value = int(r.get(counter) or 0)
                        await asyncio.sleep(0)
                        r.set(counter, value + 1)

            try:
                await asyncio.gather(*(work(lock) for lock in (first, second) for _ in range(3)))
                assert int(r.get(counter) or 0) == 120
            finally:
                r.delete(counter)
                r.close()

            # Cancelling a waiting task leaves nothing held.
            async with second.hold(timeout=5):
                waiter = asyncio.create_task(first.acquire())
                # Parked, not just subscribed: the contended tasks above left their
                # channels subscribed for 100 ms.
                await eventually(
                    lambda: asyncio.sleep(0, any(c.metrics().waiters_now > 0 for c in sites[0])),
                    what="the waiter to wait",
                )
                waiter.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await waiter
            assert _held_on(trio, name) == [False] * N

            # MultiLock needs every member.
            multi = ferrolock.aio.MultiLock([c.lock(name) for c in sites[0]])
            blocker = sites[1][0].lock(name)
            assert await blocker.acquire(blocking=False)
            assert not await multi.acquire(timeout=0.2)
            await blocker.release()
            async with multi:
                assert _held_on(trio, name) == [True] * N

            for c in sites[0] + sites[1]:
                await eventually(lambda: asyncio.sleep(0, c.subscribed_channels() == 0), what="no subscriptions")
                assert c.held_count() == 0
        finally:
            for c in sites[0] + sites[1]:
                await c.close()

        # connect / close.
        redlock = await ferrolock.aio.RedLock.connect([s.url for s in trio], name, watchdog_timeout=WATCHDOG)
        try:
            async with redlock.hold(timeout=5):
                assert _held_on(trio, name) == [True] * N
        finally:
            await redlock.close()

    asyncio.run(main())


def test_asyncio_lost(trio: list[RedisServer], name: str) -> None:
    async def main() -> None:
        clients = [await ferrolock.aio.Client.connect(s.url, watchdog_timeout=WATCHDOG) for s in trio]
        notified = threading.Event()
        try:
            redlock = ferrolock.aio.RedLock([c.lock(name) for c in clients], on_lost=lambda _l: notified.set())
            await redlock.acquire()
            for s in trio[:2]:
                r = s.redis()
                r.delete(name)
                r.close()
            await eventually(lambda: asyncio.sleep(0, redlock.lost), timeout=10, what="the redlock to be lost")
            await eventually(lambda: asyncio.sleep(0, notified.is_set()), timeout=10, what="on_lost")
            with pytest.raises(ferrolock.LockLostError):
                await redlock.release()
            assert _held_on(trio, name) == [False] * N
        finally:
            for c in clients:
                await c.close()

    asyncio.run(main())
