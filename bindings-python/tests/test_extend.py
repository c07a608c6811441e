"""lock.extend(additional, *, replace=False) and lock.reacquire() for explicit
leases (redis-py's names), and set_holder_info (shown by status)."""

from __future__ import annotations

import asyncio
import threading

import pytest

import ferrolock
import ferrolock.aio
from conftest import WATCHDOG


def _close(value: float, expected: float) -> bool:
    """A lease left of ``expected`` seconds, less what a busy machine took since."""
    return expected - 1.2 <= value <= expected


def test_extend_replace_reacquire(client: ferrolock.Client, name: str) -> None:
    lock = client.lock(name)
    assert lock.acquire(lease=2.0)
    left = lock.extend(3.0)
    assert _close(left, 5.0)
    remaining = lock.remaining_lease()
    assert remaining is not None and _close(remaining, 5.0)
    assert _close(lock.extend(1, replace=True), 1.0)
    remaining = lock.remaining_lease()
    assert remaining is not None and remaining <= 1.0
    assert _close(lock.reacquire(), 2.0)  # the lease it was taken with
    remaining = lock.remaining_lease()
    assert remaining is not None and _close(remaining, 2.0)
    lock.release()


def test_refusals(client: ferrolock.Client, client2: ferrolock.Client, name: str) -> None:
    lock = client.lock(name)
    with pytest.raises(ferrolock.NotOwnedError):
        lock.extend(1.0)  # holds nothing
    with pytest.raises(ferrolock.NotOwnedError):
        lock.reacquire()
    with lock:  # watchdog-renewed: no explicit lease to extend
        with pytest.raises(ferrolock.InvalidArgumentError):
            lock.extend(1.0)
        # Another thread holds nothing through this object.
        errors: list[BaseException] = []

        def other_thread() -> None:
            try:
                lock.extend(1.0)
            except BaseException as e:
                errors.append(e)

        t = threading.Thread(target=other_thread)
        t.start()
        t.join(10)
        assert len(errors) == 1 and isinstance(errors[0], ferrolock.NotOwnedError)
    with pytest.raises(TypeError, match="additional"):
        lock.extend("5")  # type: ignore[arg-type]
    assert lock.acquire(lease=5.0)
    with pytest.raises(ferrolock.InvalidArgumentError):
        lock.extend(-1.0)
    assert client2.lock(name).force_unlock()
    with pytest.raises(ferrolock.LockLostError):
        lock.extend(1.0)  # its hold was lost
    assert lock.lost


def test_holder_info(client: ferrolock.Client, name: str) -> None:
    lock = client.lock(name)
    with pytest.raises(ferrolock.NotOwnedError):
        lock.set_holder_info("nobody")
    with lock:
        lock.set_holder_info("worker 3 on host-a")
        [entry] = lock.status().holders
        assert entry.info == "worker 3 on host-a" and entry.count == 1
        lock.set_holder_info(None)
        assert lock.status().holders[0].info is None


def test_redlock_extend(url: str, client: ferrolock.Client, client2: ferrolock.Client, name: str) -> None:
    with ferrolock.Client(url, watchdog_timeout=WATCHDOG) as third:
        redlock = ferrolock.RedLock([c.lock(name + f":{i}") for i, c in enumerate((client, client2, third))])
        assert redlock.acquire(lease=2.0)
        assert _close(redlock.extend(3.0), 5.0)
        for member in redlock.members:
            remaining = member.remaining_lease()
            assert remaining is not None and remaining > 4.0
        assert _close(redlock.reacquire(), 2.0)
        redlock.release()


def test_asyncio(url: str, name: str) -> None:
    async def main() -> None:
        async with await ferrolock.aio.Client.connect(url) as client:
            lock = client.lock(name)
            with pytest.raises(ferrolock.NotOwnedError):
                await lock.extend(1.0)
            await lock.acquire(lease=2.0)
            assert _close(await lock.extend(3.0), 5.0)
            assert _close(await lock.extend(1.0, replace=True), 1.0)
            assert _close(await lock.reacquire(), 2.0)
            await lock.set_holder_info("task")
            assert (await lock.status()).holders[0].info == "task"
            await lock.release()

    asyncio.run(main())
