"""A closed client: every call on it, or on a lock object made from it, raises
ClientClosedError (code ERR_CLIENT_CLOSED); closing again does nothing."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import pytest

import ferrolock
import ferrolock.aio
from helpers import wait_until


def _assert_closed(call: Callable[[], object]) -> None:
    with pytest.raises(ferrolock.ClientClosedError) as info:
        call()
    assert isinstance(info.value, ferrolock.LockError)
    assert info.value.code == "ERR_CLIENT_CLOSED"
    assert "closed" in str(info.value) and "new client" in str(info.value)


def test_blocking(url: str, name: str) -> None:
    client = ferrolock.Client(url)
    lock = client.lock(name)
    fenced = client.fenced_lock(name + ":f")
    assert lock.acquire()
    assert not client.closed
    client.close()
    assert client.closed
    client.close()  # again: nothing happens
    for call in (
        lambda: client.lock(name),
        lambda: client.fenced_lock(name),
        lambda: client.synchronized(name),
        client.held_count,
        client.subscribed_channels,
        client.metrics,
        client.metrics_text,
        lambda: lock.extend(1.0),
        lock.reacquire,
        lambda: lock.set_holder_info("x"),
        lock.acquire,
        lambda: lock.acquire(blocking=False),
        lock.release,
        lock.locked,
        lock.owned,
        lock.hold_count,
        lock.remaining_lease,
        lock.force_unlock,
        lock.status,
        fenced.acquire,
        lambda: lock.hold().__enter__(),
    ):
        _assert_closed(call)
    with ferrolock.Client(url) as other:
        assert not other.lock(name).locked()  # close released it


def test_waiting_acquire_ends_with_it(url: str, name: str) -> None:
    with ferrolock.Client(url) as holder:
        client = ferrolock.Client(url)
        errors: list[BaseException] = []

        def wait() -> None:
            try:
                client.lock(name).acquire(timeout=30)
            except BaseException as e:
                errors.append(e)

        with holder.lock(name):
            t = threading.Thread(target=wait)
            t.start()
            wait_until(lambda: client.subscribed_channels() == 1, what="the acquire to wait")
            client.close()
            t.join(10)
        assert len(errors) == 1 and isinstance(errors[0], ferrolock.ClientClosedError), errors


def test_asyncio(url: str, name: str) -> None:
    async def main() -> None:
        client = await ferrolock.aio.Client.connect(url)
        lock = client.lock(name)
        await lock.acquire()
        await client.close()
        await client.close()
        assert client.closed
        _assert_closed(lambda: client.lock(name))
        _assert_closed(client.held_count)
        for coro in (lock.acquire, lock.release, lock.locked, lock.owned, lock.status, lock.force_unlock):
            with pytest.raises(ferrolock.ClientClosedError):
                await coro()
        async with await ferrolock.aio.Client.connect(url) as other:
            assert not await other.lock(name).locked()

    asyncio.run(main())
