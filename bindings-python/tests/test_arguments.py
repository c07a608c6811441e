"""Strict arguments: durations in seconds are numbers (bool and str raise
TypeError naming the argument), and a lease or timeout over a day is logged as a
warning once ("milliseconds passed as seconds?")."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest

import ferrolock
import ferrolock._args
import ferrolock.aio

BAD = [True, False, "5", b"5", [1.0], None.__class__]


@pytest.mark.parametrize("bad", BAD)
def test_blocking_lock_durations(client: ferrolock.Client, name: str, bad: Any) -> None:
    lock = client.lock(name)
    calls: list[tuple[str, Callable[[], object]]] = [
        ("timeout", lambda: lock.acquire(timeout=bad)),
        ("timeout", lambda: lock.acquire(True, bad)),
        ("lease", lambda: lock.acquire(lease=bad)),
        ("timeout", lambda: lock.hold(timeout=bad).__enter__()),
        ("lease", lambda: lock.hold(lease=bad).__enter__()),
        ("timeout", lambda: client.synchronized(name, timeout=bad)),
        ("lease", lambda: client.synchronized(name, lease=bad)),
    ]
    for what, call in calls:
        with pytest.raises(TypeError, match=f"{what} must be a number of seconds") as info:
            call()
        assert type(bad).__name__ in str(info.value)
    assert not lock.locked()  # nothing was acquired on the way


@pytest.mark.parametrize(
    "setting",
    ["watchdog_timeout", "response_timeout", "connect_timeout", "retry_window", "replica_ack_timeout", "drift_factor"],
)
@pytest.mark.parametrize("bad", [True, "2"])
def test_client_settings(url: str, setting: str, bad: Any) -> None:
    with pytest.raises(TypeError, match=setting):
        ferrolock.Client(url, **{setting: bad})

    async def connect() -> None:
        await ferrolock.aio.Client.connect(url, **{setting: bad})

    with pytest.raises(TypeError, match=setting):
        asyncio.run(connect())


def test_asyncio_lock_durations(url: str, name: str) -> None:
    async def main() -> None:
        async with await ferrolock.aio.Client.connect(url) as client:
            lock = client.lock(name)
            with pytest.raises(TypeError, match="timeout"):
                await lock.acquire(timeout="5")  # type: ignore[arg-type]
            with pytest.raises(TypeError, match="lease"):
                await lock.acquire(lease=True)
            with pytest.raises(TypeError, match="timeout"):
                async with lock.hold(timeout=True):
                    pass
            with pytest.raises(TypeError, match="lease"):
                client.synchronized(name, lease="1")  # type: ignore[arg-type]
            assert not await lock.locked()

    asyncio.run(main())


def test_numbers_still_work(client: ferrolock.Client, name: str) -> None:
    lock = client.lock(name)
    assert lock.acquire(timeout=1, lease=2)  # ints
    lock.release()
    assert lock.acquire(True, 1.5, lease=2.5)
    lock.release()
    assert lock.acquire(True, -1)
    lock.release()


def _long_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "ferrolock" and r.levelno == logging.WARNING and "milliseconds" in r.getMessage()
    ]


def test_over_a_day_warns_once(client: ferrolock.Client, name: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="ferrolock")
    ferrolock._args._warned.clear()  # once per process: start from none
    lock = client.lock(name)
    assert lock.acquire(lease=30000)  # 8.3 hours: allowed, no warning
    lock.release()
    assert _long_warnings(caplog) == []
    assert lock.acquire(lease=90000)
    lock.release()
    assert lock.acquire(lease=100000)
    lock.release()
    [lease_warning] = _long_warnings(caplog)
    assert "lease=90000" in lease_warning and "seconds" in lease_warning
    assert lock.acquire(timeout=86401)
    lock.release()
    with lock.hold(timeout=200000):
        pass
    warnings = _long_warnings(caplog)
    assert len(warnings) == 2 and "timeout=86401" in warnings[1]


@pytest.mark.parametrize("bad", BAD)
def test_family_durations_and_counts(client: ferrolock.Client, name: str, bad: Any) -> None:
    sem = client.semaphore(name)
    ps = client.permit_expirable_semaphore(name + ":p")
    latch = client.count_down_latch(name + ":l")
    rw = client.read_write_lock(name + ":rw")
    seconds: list[tuple[str, Callable[[], object]]] = [
        ("timeout", lambda: sem.acquire(timeout=bad)),
        ("timeout", lambda: sem.hold(timeout=bad).__enter__()),
        ("timeout", lambda: ps.acquire(bad)),
        ("lease", lambda: ps.acquire(lease=bad)),
        ("lease", lambda: ps.hold(lease=bad).__enter__()),
        ("timeout", lambda: latch.wait(bad)),
        ("timeout", lambda: rw.read_lock().acquire(timeout=bad)),
        ("lease", lambda: client.fair_lock(name + ":f").acquire(lease=bad)),
    ]
    for what, call in seconds:
        with pytest.raises(TypeError, match=f"{what} must be a number of seconds"):
            call()
    counts: list[tuple[str, Callable[[], object]]] = [
        ("permits", lambda: sem.try_set_permits(bad)),
        ("permits", lambda: sem.acquire(permits=bad)),
        ("permits", lambda: sem.release(bad)),
        ("permits", lambda: ps.try_set_permits(bad)),
        ("count", lambda: latch.try_set_count(bad)),
    ]
    for what, call in counts:
        with pytest.raises(TypeError, match=f"{what} must be an int"):
            call()
    assert sem.available() == 0 and latch.count() == 0  # nothing was set on the way


def test_family_asyncio_arguments(url: str, name: str) -> None:
    async def main() -> None:
        async with await ferrolock.aio.Client.connect(url) as client:
            sem = client.semaphore(name)
            with pytest.raises(TypeError, match="timeout"):
                await sem.acquire(timeout="5")  # type: ignore[arg-type]
            with pytest.raises(TypeError, match="permits"):
                await sem.release(1.0)  # type: ignore[arg-type]
            with pytest.raises(ferrolock.InvalidArgumentError, match="non-blocking"):
                await sem.acquire(False, 2.0)
            with pytest.raises(TypeError, match="timeout"):
                await client.count_down_latch(name).wait(True)
            with pytest.raises(TypeError, match="Permit or its id"):
                await client.permit_expirable_semaphore(name).release(b"00")  # type: ignore[arg-type]
            with pytest.raises(ferrolock.InvalidArgumentError, match="permits = -2"):
                await client.permit_expirable_semaphore(name).try_set_permits(-2)

    asyncio.run(main())
