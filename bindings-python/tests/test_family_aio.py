"""The rest of Redisson's family, asyncio API: every verb awaited, holders per
task, and cancelled waits that take nothing."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator

import pytest
import redis

import ferrolock
import ferrolock.aio
from helpers import eventually
from test_aio import run
from test_family import LONG_LEASE, WAKE_BOUND


@pytest.fixture(autouse=True)
def _no_keys_left(r: redis.Redis, name: str) -> Iterator[None]:
    """Semaphores and latches outlive their users: delete this test's keys."""
    yield
    for key in list(r.scan_iter(match=f"*{name}*", count=1000)):
        r.delete(key)


def subscribed(client: ferrolock.aio.Client, n: int) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return client.subscribed_channels() == n

    return check


def waiting(client: ferrolock.aio.Client, waiters: int) -> Callable[[], Awaitable[bool]]:
    """``waiters`` acquires of ``client`` parked on its one channel. Not just the channel
    subscribed: a subscription outlives its last waiter by 100 ms, so a wait that ended
    just before would count for the next one before it even started."""

    async def check() -> bool:
        return client.subscribed_channels() == 1 and client.metrics().waiters_now == waiters

    return check


def test_fair_lock_and_read_write_lock(url: str, name: str) -> None:
    async def main(client: ferrolock.aio.Client) -> None:
        fair = client.fair_lock(name)
        assert fair.kind == "fair" and repr(fair) == f"<ferrolock.aio.Lock fair lock {name!r}>"
        async with fair:
            assert await fair.owned()
            other = client.fair_lock(name)
            assert not await other.acquire(timeout=0.05)
        rw = client.read_write_lock(name + ":rw")
        assert repr(rw) == f"<ferrolock.aio.ReadWriteLock {name + ':rw'!r}>" and rw.client is client
        async with rw.write_lock():
            async with rw.read_lock():  # the writer's own read hold: one holder per task
                assert await rw.read_lock().owned()

            async def read_elsewhere() -> bool:
                return await rw.read_lock().acquire(timeout=0.05)

            # Another task is another holder: kept out by the write hold.
            assert not await asyncio.create_task(read_elsewhere())
        readers = [client.read_write_lock(name + ":rw") for _ in range(3)]
        for reader in readers:
            await reader.read_lock().acquire()
        assert len((await readers[0].read_lock().status()).holders) == 3
        for reader in readers:
            await reader.read_lock().release()

    run(main, url)


def test_fair_lock_order_across_tasks(url: str, r: redis.Redis, name: str) -> None:
    async def main(client: ferrolock.aio.Client) -> None:
        holder = client.fair_lock(name)
        await holder.acquire()
        order: list[int] = []
        tasks = []
        for i in range(3):
            lock = client.fair_lock(name)

            async def take(lock: ferrolock.aio.Lock = lock, i: int = i) -> None:
                assert await lock.acquire(timeout=WAKE_BOUND)
                order.append(i)
                await lock.release()

            tasks.append(asyncio.create_task(take()))

            async def queued(n: int = i + 1) -> bool:
                return r.llen(f"redisson_lock_queue:{{{name}}}") == n

            await eventually(queued, what=f"waiter {i} in the queue")
        await holder.release()
        await asyncio.gather(*tasks)
        assert order == [0, 1, 2]

    run(main, url)


def test_semaphore(url: str, name: str) -> None:
    async def main(client: ferrolock.aio.Client) -> None:
        sem = client.semaphore(name)
        assert repr(sem) == f"<ferrolock.aio.Semaphore {name!r}>"
        assert await sem.try_set_permits(2) and not await sem.try_set_permits(3)
        assert await sem.acquire(permits=2)
        assert not await sem.acquire(blocking=False)
        assert await sem.release(2) == 2
        async with sem:
            assert await sem.available() == 1
        async with sem.hold(timeout=1.0, permits=2):
            with pytest.raises(ferrolock.LockTimeoutError):
                async with sem.hold(timeout=0.05):
                    pass
        # At most 2 of 6 tasks inside at once.
        inside = most = 0

        async def work() -> None:
            nonlocal inside, most
            for _ in range(5):
                async with sem:
                    inside += 1
                    most = max(most, inside)
                    await asyncio.sleep(0.005)
                    inside -= 1

        await asyncio.gather(*(work() for _ in range(6)))
        assert 1 <= most <= 2
        # Woken by a release, well before anything could expire.
        assert await sem.drain() == 2
        waiter = asyncio.create_task(sem.acquire(timeout=WAKE_BOUND))
        await eventually(waiting(client, 1), what="the waiter to wait")
        await sem.release()
        assert await waiter
        assert await sem.available() == 0

    run(main, url)


def test_a_cancelled_semaphore_wait_takes_nothing(url: str, r: redis.Redis, name: str) -> None:
    names = [f"{name}:{i}" for i in range(30)]
    outcomes: set[str] = set()

    async def main(client: ferrolock.aio.Client) -> None:
        for i, sem_name in enumerate(names):
            sem = client.semaphore(sem_name)
            await sem.try_set_permits(0)
            task = asyncio.create_task(sem.acquire())
            for _ in range(i % 4):
                await asyncio.sleep(0)
            await sem.release()  # races with the cancel below
            task.cancel()
            try:
                took = await task
                outcomes.add("acquired")
            except asyncio.CancelledError:
                took = False
                outcomes.add("cancelled")
            if took:
                await sem.release()
            await eventually(subscribed(client, 0), what="the waiter to leave")

    # Closing the client waits for what the cancelled acquires left in flight (an
    # attempt the server runs after the cancel, and the giving back of what it took),
    # so only then is each permit's final state known: free again, whatever the race gave.
    run(main, url)
    assert "cancelled" in outcomes
    assert [r.get(n) for n in names] == [b"1"] * len(names)


def test_permit_expirable_semaphore(url: str, name: str) -> None:
    async def main(client: ferrolock.aio.Client) -> None:
        ps = client.permit_expirable_semaphore(name)
        assert await ps.try_set_permits(1)
        permit = await ps.acquire(lease=1.0)
        assert permit is not None and permit.lease == 1.0
        assert await ps.acquire(timeout=0.02) is None
        start = time.monotonic()
        again = await ps.acquire(timeout=WAKE_BOUND)  # the lease ends: it comes back
        assert again is not None and time.monotonic() - start < WAKE_BOUND
        assert not await ps.release(permit)
        # A cancelled wait takes nothing.
        waiter = asyncio.create_task(ps.acquire())
        await eventually(waiting(client, 1), what="the waiter to wait")
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        await eventually(subscribed(client, 0), what="the waiter to leave")
        assert await ps.release(again.id)
        assert await ps.available() == 1
        async with ps.hold(lease=LONG_LEASE) as held:
            assert len(held.id) == 32 and await ps.available() == 0
            with pytest.raises(ferrolock.LockTimeoutError):
                async with ps.hold(timeout=0.05):
                    pass
        # Woken by a release message.
        first = await ps.acquire(lease=LONG_LEASE)
        assert first is not None
        waiter2 = asyncio.create_task(ps.acquire(timeout=WAKE_BOUND))
        await eventually(waiting(client, 1), what="the waiter to wait")
        assert await ps.release(first)
        second = await waiter2
        assert second is not None and await ps.release(second)

    run(main, url)


def test_a_cancelled_permit_wait_takes_nothing(url: str, name: str) -> None:
    async def main(client: ferrolock.aio.Client) -> None:
        ps = client.permit_expirable_semaphore(name)
        await ps.try_set_permits(1)
        outcomes: set[str] = set()
        for i in range(30):
            held = await ps.acquire()
            assert held is not None
            task = asyncio.create_task(ps.acquire())
            for _ in range(i % 4):
                await asyncio.sleep(0)
            await ps.release(held)  # races with the cancel below
            task.cancel()
            try:
                got = await task
                outcomes.add("acquired")
            except asyncio.CancelledError:
                got = None
                outcomes.add("cancelled")
            if got is not None:
                assert await ps.release(got)

            async def one_free() -> bool:
                return await ps.available() == 1

            await eventually(one_free, what="the permit to be free after a cancelled acquire")
            await eventually(subscribed(client, 0), what="the waiter to leave")
        assert "cancelled" in outcomes

    run(main, url)


def test_count_down_latch(url: str, name: str) -> None:
    async def main(client: ferrolock.aio.Client) -> None:
        latch = client.count_down_latch(name)
        assert repr(latch) == f"<ferrolock.aio.CountDownLatch {name!r}>"
        assert await latch.try_set_count(2) and not await latch.try_set_count(1)
        assert await latch.count() == 2
        assert not await latch.wait(0.02)
        waiters = [asyncio.create_task(latch.wait(WAKE_BOUND)) for _ in range(3)]
        await eventually(waiting(client, 3), what="the waiters to wait")
        assert await latch.count_down() == 1
        assert await latch.count_down() == 0
        assert await asyncio.gather(*waiters) == [True, True, True]
        # A cancelled wait leaves no subscription.
        await latch.try_set_count(1)
        waiter = asyncio.create_task(latch.wait())
        await eventually(waiting(client, 1), what="the waiter to wait")
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        await eventually(subscribed(client, 0), what="the waiter to leave")
        assert await latch.count_down() == 0

    run(main, url)


def test_errors(url: str, r: redis.Redis, name: str) -> None:
    r.set(name, "not a number")

    async def main(client: ferrolock.aio.Client) -> None:
        with pytest.raises(ferrolock.WrongTypeError):
            await client.semaphore(name).acquire(timeout=0.05)
        with pytest.raises(ferrolock.WrongTypeError):
            await client.permit_expirable_semaphore(name).available()
        with pytest.raises(ferrolock.WrongTypeError):
            await client.count_down_latch(name).wait(0.05)
        with pytest.raises(ferrolock.WrongTypeError):
            await client.read_write_lock(name).write_lock().acquire(timeout=0.05)
        sem = client.semaphore(name + ":s")
        with pytest.raises(TypeError, match="permits must be an int"):
            await sem.acquire(permits=True)
        with pytest.raises(ferrolock.InvalidArgumentError, match="permits = 0"):
            await sem.acquire(permits=0)
        with pytest.raises(ferrolock.InvalidArgumentError, match="count = 0"):
            await client.count_down_latch(name + ":l").try_set_count(0)
        with pytest.raises(TypeError, match="lease must be a number"):
            await client.permit_expirable_semaphore(name + ":p").acquire(lease="5")  # type: ignore[arg-type]

        async def in_another_task() -> None:
            with pytest.raises(ferrolock.NotOwnedError):
                await client.read_write_lock(name + ":rw").read_lock().release()

        await asyncio.create_task(in_another_task())

    run(main, url)

    async def closed() -> None:
        client = await ferrolock.aio.Client.connect(url)
        sem, latch = client.semaphore(name + ":s"), client.count_down_latch(name + ":l")
        await client.close()
        with pytest.raises(ferrolock.ClientClosedError):
            await sem.available()
        with pytest.raises(ferrolock.ClientClosedError):
            await latch.wait()
        with pytest.raises(ferrolock.ClientClosedError):
            client.permit_expirable_semaphore(name)

    asyncio.run(closed())
