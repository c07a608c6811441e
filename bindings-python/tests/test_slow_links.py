"""A hold over a link slower than the response timeout (250 ms each way through
tests/harness's fault-proxy, a 300 ms response timeout, a 1.5 s watchdog lease): a
renewal waits up to a lease for its answer, so the hold stays on the server and is
never reported lost. (Other requests on the renewals' connection, the holder notes
written once a hold lasts a second, used to time out there and retire it, and the
next renewal then waited for a new connection: holds were lost about 2 s in.) The
blocking API (its calls drive a connection of the calling thread) and asyncio."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
import redis

import ferrolock
import ferrolock.aio
from helpers import FaultProxy, RedisServer

LEASE = 1.5
ONE_WAY_MS = 250
RESPONSE_TIMEOUT = 0.3
WATCHED = LEASE * 4


def held_alone(r: redis.Redis, name: str) -> bool:
    """One owner field holding one level, with a lease running."""
    fields: dict[bytes, bytes] = r.hgetall(name)  # type: ignore[assignment]
    return list(fields.values()) == [b"1"] and int(r.pttl(name)) > 0


def test_sync_hold_is_kept_over_a_link_slower_than_the_response_timeout(proxy: FaultProxy, r: redis.Redis, name: str) -> None:
    lost: list[str] = []
    client = ferrolock.Client(proxy.url, watchdog_timeout=LEASE, response_timeout=RESPONSE_TIMEOUT)
    try:
        lock = client.lock(name, on_lost=lambda _lock, reason: lost.append(reason))
        assert lock.acquire()
        proxy.send(f"delay {ONE_WAY_MS}")
        until = time.monotonic() + WATCHED
        while time.monotonic() < until:
            assert held_alone(r, name), "the hold left the server over the slow link"
            assert not lost and not lock.lost, f"reported lost over the slow link: {lost}"
            time.sleep(0.025)
        proxy.send("delay 0")
        lock.release()
    finally:
        client.close()
    assert lost == []
    assert r.exists(name) == 0


def test_aio_hold_is_kept_over_a_link_slower_than_the_response_timeout(proxy: FaultProxy, r: redis.Redis, name: str) -> None:
    lost: list[str] = []

    async def main() -> None:
        client = await ferrolock.aio.Client.connect(proxy.url, watchdog_timeout=LEASE, response_timeout=RESPONSE_TIMEOUT)
        async with client:
            lock = client.lock(name, on_lost=lambda _lock, reason: lost.append(reason))
            assert await lock.acquire()
            proxy.send(f"delay {ONE_WAY_MS}")
            until = time.monotonic() + WATCHED
            while time.monotonic() < until:
                assert await asyncio.to_thread(held_alone, r, name), "the hold left the server over the slow link"
                assert not lost and not lock.lost, f"reported lost over the slow link: {lost}"
                await asyncio.sleep(0.025)
            proxy.send("delay 0")
            await lock.release()

    asyncio.run(main())
    assert lost == []
    assert r.exists(name) == 0
