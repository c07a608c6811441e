"""The asyncio API: exclusion between tasks, identity per task, cancellation."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Awaitable, Callable

import pytest
import redis
import redis.asyncio

import ferrolock
import ferrolock.aio
from conftest import WATCHDOG
from helpers import eventually

TASKS = 8
INCREMENTS = 100


async def no_subscriptions(client: ferrolock.aio.Client) -> bool:
    return client.subscribed_channels() == 0


def run(main: Callable[[ferrolock.aio.Client], Awaitable[None]], url: str, watchdog: float = WATCHDOG) -> None:
    """Runs ``main(client)`` in a fresh event loop; the client must end clean."""

    async def wrapper() -> None:
        async with await ferrolock.aio.Client.connect(url, watchdog_timeout=watchdog) as client:
            await main(client)
            await eventually(lambda: no_subscriptions(client), what="no subscriptions left")
            assert client.held_count() == 0

    asyncio.run(wrapper())


def test_tasks_exclude_each_other(url: str, r: redis.Redis, name: str) -> None:
    counter = f"{name}:counter"

    async def main(client: ferrolock.aio.Client) -> None:
        lock = client.lock(name)
        ar = redis.asyncio.Redis.from_url(url)

        async def work() -> None:
            for _ in range(INCREMENTS):
                async with lock:
                    value = int(await ar.get(counter) or 0)  # read ...
                    await ar.set(counter, value + 1)  # ... modify, write: not atomic

        await asyncio.gather(*(work() for _ in range(TASKS)))
        await ar.aclose()
        assert not await lock.locked()

    run(main, url)
    assert int(r.get(counter) or 0) == TASKS * INCREMENTS
    r.delete(counter)


def test_reentrancy_and_identity_per_task(url: str, name: str) -> None:
    async def main(client: ferrolock.aio.Client) -> None:
        lock = client.lock(name)
        twin = client.lock(name)
        assert await lock.acquire()
        assert await lock.acquire(blocking=False)  # same task re-enters
        assert await lock.hold_count() == 2
        assert not await twin.acquire(blocking=False)  # another object, same task

        async def other_task() -> tuple[bool, bool, BaseException | None]:
            acquired = await lock.acquire(blocking=False)
            owned = await lock.owned()
            try:
                await lock.release()
                error = None
            except ferrolock.NotOwnedError as e:
                error = e
            return acquired, owned, error

        acquired, owned, error = await asyncio.create_task(other_task())
        assert (acquired, owned) == (False, False)
        assert isinstance(error, ferrolock.aio.NotOwnedError)
        await lock.release()
        assert await lock.owned()
        await lock.release()
        assert not await lock.locked()
        with pytest.raises(ferrolock.NotOwnedError):
            await lock.release()
        async with twin.hold(timeout=1.0):
            assert await twin.owned()

    run(main, url)


def test_timeouts(url: str, name: str) -> None:
    async def main(client: ferrolock.aio.Client) -> None:
        holder = client.lock(name)
        waiter = client.lock(name)
        await holder.acquire()
        start = time.monotonic()
        assert not await waiter.acquire(timeout=0.3)
        assert 0.29 <= time.monotonic() - start < 2
        with pytest.raises(ferrolock.LockTimeoutError):
            async with waiter.hold(timeout=0.1):
                pass
        with pytest.raises(ferrolock.InvalidArgumentError):
            await waiter.acquire(timeout=-5)
        async def take() -> float | None:
            # The acquiring task is the holder: it releases, too.
            assert await waiter.acquire(timeout=10)
            remaining = await waiter.remaining_lease()
            await waiter.release()
            return remaining

        got = asyncio.create_task(take())
        await eventually(lambda: subscribed(client), what="the waiter to subscribe")
        await holder.release()
        remaining = await got
        assert remaining is not None and 0 < remaining <= WATCHDOG

    async def subscribed(client: ferrolock.aio.Client) -> bool:
        # Parked, not just subscribed: the channel of the timed-out waits above stays
        # subscribed 100 ms after them.
        return client.subscribed_channels() == 1 and client.metrics().waiters_now == 1

    run(main, url)


def test_cancelling_a_waiting_acquire_leaves_nothing_behind(url: str, r: redis.Redis, name: str) -> None:
    async def main(client: ferrolock.aio.Client) -> None:
        holder = client.lock(name)
        waiter = client.lock(name)
        await holder.acquire()
        task = asyncio.create_task(waiter.acquire())

        async def subscribed() -> bool:
            return client.subscribed_channels() == 1

        await eventually(subscribed, what="the waiter to subscribe")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await eventually(lambda: no_subscriptions(client), what="the cancelled waiter to unsubscribe")
        await holder.release()
        # Nobody picked the lock up on behalf of the cancelled task.
        assert not await holder.locked()
        # wait_for's timeout cancels the same way.
        await holder.acquire()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(waiter.acquire(), 0.1)
        # The Rust side of the cancelled acquire goes away a moment after asyncio's
        # cancel: release only once it has (as above), so no hand-off can reach it.
        await eventually(lambda: no_subscriptions(client), what="the timed-out waiter to unsubscribe")
        await holder.release()
        assert not await holder.locked()

    run(main, url)
    assert r.exists(name) == 0


def test_cancel_racing_with_acquisition_never_leaks_a_hold(url: str, r: redis.Redis, name: str) -> None:
    async def main(client: ferrolock.aio.Client) -> None:
        holder = client.lock(name)
        waiter = client.lock(name)
        outcomes: set[str] = set()
        for i in range(40):
            await holder.acquire()

            async def take() -> None:
                assert await waiter.acquire()
                outcomes.add("acquired")
                await waiter.release()

            task = asyncio.create_task(take())
            # Let the waiter get to a varying point before the release and the cancel.
            for _ in range(i % 4):
                await asyncio.sleep(0)
            await holder.release()
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                outcomes.add("cancelled")

            async def free() -> bool:
                return not await holder.locked()

            await eventually(free, what="the lock to be free after a cancelled acquire")
        assert "cancelled" in outcomes

    run(main, url)
    assert r.exists(name) == 0


def test_waiters_cancelled_as_the_holder_releases_never_keep_the_lock(url: str, r: redis.Redis, name: str) -> None:
    """Parked waiters cancelled just before the holder's release: the release may
    hand the lock to one of them (same-client hand-off, let go before the release's
    reply since the lease outlives the response timeout) while its cancellation is
    under way. Whatever reaches a cancelled task is given back; it used to stay held
    by nobody, renewed until the client closed, in about half of these rounds."""

    async def main(client: ferrolock.aio.Client) -> None:
        lock = client.lock(name)

        async def hold_until(release: asyncio.Event, holding: asyncio.Event) -> None:
            await lock.acquire()
            holding.set()
            await release.wait()
            await lock.release()

        async def wait_for_it() -> None:
            await lock.acquire()
            await lock.release()

        async def parked() -> bool:
            return client.metrics().waiters_now == 3

        async def free() -> bool:
            return client.held_count() == 0 and not await lock.locked()

        for _ in range(30):
            release, holding = asyncio.Event(), asyncio.Event()
            holder = asyncio.create_task(hold_until(release, holding))
            await holding.wait()
            waiters = [asyncio.create_task(wait_for_it()) for _ in range(3)]
            await eventually(parked, what="three waiters parked")
            for waiter in waiters:
                waiter.cancel()
            release.set()
            await holder
            for waiter in waiters:
                with pytest.raises(asyncio.CancelledError):
                    await waiter
            await eventually(free, what="the lock free, held by nobody in this client")

    run(main, url, watchdog=5.0)
    assert r.exists(name) == 0


def test_on_lost_and_lost_flag(url: str, name: str) -> None:
    async def main(client: ferrolock.aio.Client) -> None:
        lost = threading.Event()
        lock = client.lock(name, on_lost=lambda _lock: lost.set())
        await lock.acquire()
        other = await ferrolock.aio.Client.connect(url)
        assert await other.lock(name).force_unlock()
        await other.close()
        assert await asyncio.to_thread(lost.wait, WATCHDOG * 3)
        assert lock.lost
        with pytest.raises(ferrolock.LockLostError):
            await lock.release()

    run(main, url)


def test_fenced_tokens(url: str, name: str) -> None:
    async def main(client: ferrolock.aio.Client) -> None:
        lock = client.fenced_lock(name)
        tokens: list[int] = []

        async def work() -> None:
            for _ in range(5):
                async with lock:
                    assert lock.token is not None
                    tokens.append(lock.token)

        await asyncio.gather(*(work() for _ in range(4)))
        assert tokens == sorted(tokens) and len(set(tokens)) == 20

    run(main, url)


def test_lock_kinds_and_reprs(url: str, client: ferrolock.Client, name: str) -> None:
    async def main(aclient: ferrolock.aio.Client) -> None:
        for c, api in ((client, "ferrolock"), (aclient, "ferrolock.aio")):
            plain, fenced = c.lock(name), c.fenced_lock(name + ":fenced")
            assert (plain.kind, plain.fenced) == ("reentrant", False)
            assert (fenced.kind, fenced.fenced) == ("fenced", True)
            assert repr(plain) == f"<{api}.Lock lock {name!r}>"
            assert repr(fenced) == f"<{api}.Lock fenced lock {name + ':fenced'!r}>"
            assert repr(c) == f"<{api}.Client id={c.id}>"
        assert ferrolock.Lock.__module__ == ferrolock.Client.__module__ == "ferrolock"

    run(main, url)


def test_sync_and_async_locks_exclude_each_other(url: str, client: ferrolock.Client, name: str) -> None:
    sync_lock = client.lock(name)
    # One thread for sync_lock, whose holder is (lock object, thread): two
    # asyncio.to_thread calls may run on two executor threads.
    thread = concurrent.futures.ThreadPoolExecutor(max_workers=1)

    async def main(aclient: ferrolock.aio.Client) -> None:
        loop = asyncio.get_running_loop()
        alock = aclient.lock(name)
        async with alock:
            assert not await loop.run_in_executor(thread, sync_lock.acquire, False)
        assert await loop.run_in_executor(thread, sync_lock.acquire, False)
        assert not await alock.acquire(blocking=False)
        await loop.run_in_executor(thread, sync_lock.release)

    try:
        run(main, url)
    finally:
        thread.shutdown()
