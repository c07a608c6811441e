"""@client.synchronized(name): the function runs while holding the lock (sync and asyncio)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import ferrolock
import ferrolock.aio
from conftest import WATCHDOG


def test_runs_holding_the_lock(client: ferrolock.Client, client2: ferrolock.Client, name: str) -> None:
    other = client2.lock(name)

    @client.synchronized(name, timeout=5.0)
    def work(x: int, *, y: int) -> int:
        """Adds."""
        assert work.lock.owned()
        assert other.locked()
        return x + y

    assert work(1, y=2) == 3
    assert work.__name__ == "work" and work.__doc__ == "Adds."
    assert not other.locked()  # released on return

    @client.synchronized(name)
    def fails() -> None:
        raise KeyError("boom")

    with pytest.raises(KeyError):
        fails()
    assert not other.locked()  # released on raise


def test_recursion_re_enters(client: ferrolock.Client, name: str) -> None:
    @client.synchronized(name)
    def depth(n: int) -> int:
        return depth.lock.hold_count() if n == 0 else depth(n - 1)

    assert depth(3) == 4
    assert not depth.lock.locked()


def test_not_acquired_in_time_raises(client: ferrolock.Client, client2: ferrolock.Client, name: str) -> None:
    ran: list[int] = []

    @client.synchronized(name, timeout=0.2)
    def bounded() -> None:
        ran.append(1)

    @client.synchronized(name, timeout=0)
    def once() -> None:
        ran.append(2)

    with client2.lock(name):
        start = time.monotonic()
        with pytest.raises(ferrolock.LockTimeoutError) as info:
            bounded()
        assert time.monotonic() - start >= 0.15
        assert info.value.code == "ERR_NOT_ACQUIRED" and name in str(info.value)
        with pytest.raises(ferrolock.LockTimeoutError):
            once()
    assert ran == []
    bounded()
    assert ran == [1]


def test_threads_exclude_each_other(client: ferrolock.Client, name: str) -> None:
    inside = 0
    overlaps = 0
    counter = threading.Lock()

    @client.synchronized(name, timeout=30.0)
    def critical() -> None:
        nonlocal inside, overlaps
        with counter:
            inside += 1
            overlaps += inside > 1
        time.sleep(0.002)  # widen the window an overlap would need
        with counter:
            inside -= 1

    threads = [threading.Thread(target=lambda: [critical() for _ in range(10)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert overlaps == 0


def test_fenced_and_lease(client: ferrolock.Client, name: str) -> None:
    tokens: list[int] = []

    @client.synchronized(name, fenced=True, lease=5.0)
    def write() -> None:
        assert write.lock.fenced
        token = write.lock.token
        assert token is not None
        tokens.append(token)
        remaining = write.lock.remaining_lease()
        assert remaining is not None and remaining <= 5.0  # an explicit lease, not the watchdog's

    write()
    write()
    assert tokens[1] > tokens[0]


def test_wrong_kind_of_function(client: ferrolock.Client, url: str, name: str) -> None:
    async def coro() -> None: ...

    with pytest.raises(TypeError, match="ferrolock.aio.Client.synchronized"):
        client.synchronized(name)(coro)

    async def main() -> None:
        async with await ferrolock.aio.Client.connect(url) as aclient:
            with pytest.raises(TypeError, match="ferrolock.Client.synchronized"):
                aclient.synchronized(name)(lambda: None)  # type: ignore[arg-type, return-value]

    asyncio.run(main())


def test_asyncio(url: str, name: str) -> None:
    async def main() -> None:
        async with await ferrolock.aio.Client.connect(url, watchdog_timeout=WATCHDOG) as client, \
                await ferrolock.aio.Client.connect(url, watchdog_timeout=WATCHDOG) as client2:
            inside = 0
            overlaps = 0

            @client.synchronized(name, timeout=30.0)
            async def critical(i: int) -> int:
                """Doubles."""
                nonlocal inside, overlaps
                inside += 1
                overlaps += inside > 1
                assert await critical.lock.owned()
                await asyncio.sleep(0.002)
                inside -= 1
                return 2 * i

            results = await asyncio.gather(*(critical(i) for i in range(20)))
            assert results == [2 * i for i in range(20)] and overlaps == 0
            assert critical.__name__ == "critical" and critical.__doc__ == "Doubles."

            @client.synchronized(name, timeout=0.2)
            async def bounded() -> None:
                raise AssertionError("ran without the lock")

            other = client2.lock(name)
            async with other:
                with pytest.raises(ferrolock.LockTimeoutError):
                    await bounded()
                # Cancelled while it waits: leaves nothing held.
                waiting = asyncio.ensure_future(critical(1))
                await asyncio.sleep(0.05)
                waiting.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await waiting
            assert not await other.locked()
            assert client.held_count() == 0

    asyncio.run(main())
