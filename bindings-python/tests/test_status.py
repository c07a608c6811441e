"""lock.status(): the lock as the server sees it (holders, lease left, waiting
clients, last fencing token), sync and asyncio."""

from __future__ import annotations

import asyncio
import math
import threading

import pytest

import ferrolock
import ferrolock.aio
from conftest import WATCHDOG
from helpers import RedisServer, wait_until


def test_status(client: ferrolock.Client, client2: ferrolock.Client, name: str) -> None:
    lock = client.lock(name)
    free = lock.status()
    assert free == ferrolock.LockStatus(
        name=name, holders=(), remaining_lease=None, subscribers=0, last_token=None, eviction_policy=None
    )
    assert not free.locked
    with lock, lock:
        held = lock.status()
        assert held.locked and held.name == name
        [entry] = held.holders
        assert entry.owner.startswith(client.id + ":") and entry.count == 2 and entry.info is None
        assert held.remaining_lease is not None and 0 < held.remaining_lease <= WATCHDOG
        # Another client waits: it shows as a subscriber of the lock's channel.
        waiter = client2.lock(name)
        def wait() -> None:
            if waiter.acquire(timeout=10):
                waiter.release()

        t = threading.Thread(target=wait)
        t.start()
        wait_until(lambda: lock.status().subscribers == 1, what="the waiter to subscribe")
    t.join(10)
    assert not lock.status().locked


def test_fenced_and_lease(client: ferrolock.Client, name: str) -> None:
    lock = client.fenced_lock(name)
    with lock.hold(lease=60):
        status = lock.status()
        assert status.last_token == lock.token
        assert status.remaining_lease is not None and 50 < status.remaining_lease <= 60


def test_wrong_type(client: ferrolock.Client, name: str, r: object) -> None:
    import redis

    assert isinstance(r, redis.Redis)
    r.set(name, "x")
    try:
        with pytest.raises(ferrolock.WrongTypeError):
            client.lock(name).status()
    finally:
        r.delete(name)


def test_no_expiry(client: ferrolock.Client, name: str, r: object) -> None:
    import redis

    assert isinstance(r, redis.Redis)
    r.hset(name, "someone:1", 1)
    try:
        status = client.lock(name).status()
        assert status.holders == (ferrolock.HolderEntry("someone:1", 1),)
        assert status.holders[0].description.startswith("someone:1 (no note")
        assert status.remaining_lease == math.inf
    finally:
        r.delete(name)


def test_asyncio(url: str, name: str) -> None:
    async def main() -> None:
        async with await ferrolock.aio.Client.connect(url) as client:
            lock = client.lock(name)
            assert not (await lock.status()).locked
            async with lock:
                status = await lock.status()
                assert [h.count for h in status.holders] == [1]
                assert status.holders[0].owner.startswith(client.id)

    asyncio.run(main())


def test_a_server_that_may_evict_lock_keys_is_named_in_status_and_inspect() -> None:
    """maxmemory with any policy but noeviction may evict a held lock: a client
    connected to such a server says which policy, in status() and inspect()."""
    srv = RedisServer(extra_args=["--maxmemory", "1gb", "--maxmemory-policy", "volatile-lru"]).start()
    try:
        with ferrolock.Client(srv.url) as c:
            assert c.lock("ev").status().eviction_policy == "volatile-lru"
            assert c.inspect("ev").eviction_policy == "volatile-lru"
    finally:
        srv.stop()

