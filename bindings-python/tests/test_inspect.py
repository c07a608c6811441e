"""client.inspect() and client.scan(): what a name is, told from its keys, with
its holders and their notes, waiters, permits or count; the names under a prefix.
Sync and asyncio."""

from __future__ import annotations

import asyncio
import math
import threading

import pytest
import redis

import ferrolock
import ferrolock.aio
from conftest import WATCHDOG
from helpers import wait_until


def test_inspect_and_scan(client: ferrolock.Client, client2: ferrolock.Client, r: redis.Redis, url: str, name: str) -> None:
    lock_name, sem_name, latch_name = f"{name}:lock", f"{name}:sem", f"{name}:latch"
    lock = client.lock(lock_name)
    semaphore = client.semaphore(sem_name)
    assert semaphore.try_set_permits(0)
    assert client.count_down_latch(latch_name).try_set_count(2)
    try:
        with lock:
            lock.set_holder_info("worker 7")
            waiter = client2.lock(lock_name)

            def wait() -> None:
                if waiter.acquire(timeout=10):
                    waiter.release()

            t = threading.Thread(target=wait)
            t.start()
            wait_until(lambda: client.inspect(lock_name).waiters == 1, what="the waiter to subscribe")
            seen = client.inspect(lock_name)
            assert (seen.name, seen.kind, seen.locked, seen.last_token) == (lock_name, "lock", True, None)
            [holder] = seen.holders
            assert holder.owner.startswith(client.id + ":") and holder.count == 1 and holder.info == "worker 7"
            assert seen.lease_left is not None and 0 < seen.lease_left <= WATCHDOG
            assert client.scan(f"{name}:") == [latch_name, lock_name, sem_name]
        t.join(10)
        assert not client.inspect(lock_name).locked
        sem = client.inspect(sem_name)
        assert (sem.kind, sem.permits, sem.holders, sem.lease_left) == ("semaphore", 0, (), None)
        latch = client.inspect(latch_name)
        assert (latch.kind, latch.count) == ("semaphore_or_latch", 2)
        assert client.inspect(latch_name, "count_down_latch").kind == "count_down_latch"
        with pytest.raises(ferrolock.WrongTypeError):
            client.inspect(sem_name, "fair_lock")
        with pytest.raises(ferrolock.InvalidArgumentError):
            client.inspect(sem_name, "queue")
        assert client.scan(f"{name}:nothing") == []

        async def main() -> None:
            async with await ferrolock.aio.Client.connect(url) as aclient:
                alock = aclient.fenced_lock(lock_name)
                async with alock:
                    seen = await aclient.inspect(lock_name)
                    assert (seen.kind, seen.locked) == ("fenced_lock", True)
                    assert seen.last_token is not None and seen.lease_left is not None and math.isfinite(seen.lease_left)
                assert await aclient.scan(f"{name}:") == [latch_name, lock_name, sem_name]

        asyncio.run(main())
    finally:
        r.delete(sem_name, latch_name)
