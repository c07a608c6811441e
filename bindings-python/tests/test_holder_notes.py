"""Holder notes (issue 31): a long hold's note names its app, host, pid and thread
(or asyncio task) in status and inspect; ``holder_notes="off"`` writes nothing,
and by default a short hold writes nothing; a timed-out ``hold()`` names the
holder in ``LockTimeoutError.holder``; a long wait logs who is in the way on the
``"ferrolock"`` logger. Bad option values raise typed errors."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

import ferrolock
import ferrolock.aio
from helpers import RedisServer, wait_until


@pytest.fixture
def own_server() -> Iterator[RedisServer]:
    """A server of the test's own: its command stats count this test's calls only."""
    srv = RedisServer().start()
    try:
        yield srv
    finally:
        srv.stop()


def noted(lock: ferrolock.Lock) -> ferrolock.HolderEntry:
    """The lock's first holder once it has a note (10 s at most)."""
    found: list[ferrolock.HolderEntry] = []

    def has_note() -> bool:
        found[:] = [h for h in lock.status().holders if h.thread is not None]
        return bool(found)

    wait_until(has_note, timeout=10, what="the holder's note")
    return found[0]


def calls(r: redis.Redis, command: str) -> int:
    """Calls of ``command`` the server ran (scripts' calls included)."""
    stats: dict[str, Any] = r.info("commandstats")
    return int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))


def hold_in_thread(lock: ferrolock.Lock, thread_name: str) -> tuple[threading.Event, threading.Thread]:
    """Holds ``lock`` from a thread named ``thread_name`` until the event is set."""
    held, done = threading.Event(), threading.Event()

    def run() -> None:
        with lock:
            held.set()
            done.wait(30)

    t = threading.Thread(target=run, name=thread_name)
    t.start()
    assert held.wait(10), "the holding thread did not acquire"
    return done, t


def test_a_long_hold_is_noted_with_its_thread(url: str, name: str) -> None:
    with ferrolock.Client(url, watchdog_timeout=1.5, app_name="billing", holder_note_after=0.1) as client:
        lock = client.lock(name)
        done, t = hold_in_thread(lock, "worker-3")
        try:
            holder = noted(lock)
            assert (holder.app, holder.pid, holder.thread, holder.renewed) == ("billing", os.getpid(), "worker-3", True)
            assert holder.host and holder.owner.startswith(client.id + ":") and holder.count == 1
            assert holder.since_ms is not None and holder.held_for is not None and holder.held_for >= 0.05
            assert holder.description.startswith(f"billing on {holder.host} pid {os.getpid()} (thread worker-3) for ")
            assert holder.info is not None and '"thread":"worker-3"' in holder.info  # the raw note
            [seen] = client.inspect(name).holders
            assert (seen.owner, seen.app, seen.thread, seen.pid) == (holder.owner, "billing", "worker-3", os.getpid())
        finally:
            done.set()
            t.join(10)
        # The thread name is read at each acquire: renamed, the next hold of the same
        # holder (this thread's) says the new one.
        before = threading.current_thread().name
        try:
            for label in ("first-name", "renamed-main"):
                threading.current_thread().name = label
                with lock:
                    wait_until(lambda: [h.thread for h in lock.status().holders] == [label], timeout=10, what=label)
        finally:
            threading.current_thread().name = before


def test_an_asyncio_hold_is_noted_with_its_task(url: str, name: str) -> None:
    async def main() -> None:
        async with await ferrolock.aio.Client.connect(url, app_name="reports", holder_notes="always") as client:
            lock = client.lock(name)

            async def job() -> None:
                async with lock:
                    # "always": written before the acquire returned.
                    [holder] = (await lock.status()).holders
                    assert (holder.app, holder.thread, holder.renewed) == ("reports", "nightly-job", True)
                    assert holder.description.startswith("reports on ")

            await asyncio.create_task(job(), name="nightly-job")

    asyncio.run(main())


def test_a_multi_lock_labels_every_member(url: str, name: str) -> None:
    settings: dict[str, Any] = {"watchdog_timeout": 1.5, "holder_note_after": 0}
    with ferrolock.Client(url, **settings) as a, ferrolock.Client(url, **settings) as b:
        members = [a.lock(f"{name}:a"), b.lock(f"{name}:b")]
        multi = ferrolock.MultiLock(members)
        before = threading.current_thread().name
        try:
            for label in ("multi-1", "multi-2"):
                threading.current_thread().name = label

                def labelled() -> bool:
                    return [[h.thread for h in m.status().holders] for m in members] == [[label], [label]]

                with multi:
                    wait_until(labelled, timeout=10, what=f"both members noted as {label}")
        finally:
            threading.current_thread().name = before


def test_off_and_short_holds_write_nothing(own_server: RedisServer) -> None:
    r = own_server.redis()
    # Default mode: 50 holds of about 1 ms, while the watchdog looks several times a second.
    with ferrolock.Client(own_server.url, watchdog_timeout=0.3) as client:
        lock = client.lock("short")
        for _ in range(50):
            with lock:
                time.sleep(0.001)
    # Off: a long hold neither, held across several renewals.
    with ferrolock.Client(own_server.url, watchdog_timeout=0.3, holder_notes="off", holder_note_after=0) as quiet:
        lock = quiet.lock("long")
        with lock:
            wait_until(lambda: quiet.metrics().renewals >= 3, timeout=10, what="three renewals")
            assert calls(r, "time") == 0, "the notes script (the only other caller of TIME than status) never ran"
            assert list(r.scan_iter("ferrolock_holder_info*")) == []
            [holder] = lock.status().holders
            assert (holder.info, holder.thread, holder.held_for) == (None, None, None)
            assert holder.description.startswith(holder.owner)
    r.close()


def test_a_timed_out_hold_names_the_holder(url: str, name: str) -> None:
    with ferrolock.Client(url, watchdog_timeout=1.5, app_name="billing", holder_note_after=0) as holding, \
            ferrolock.Client(url, watchdog_timeout=1.5) as waiting:
        lock = holding.lock(name)
        done, t = hold_in_thread(lock, "worker-3")
        try:
            expected = noted(lock)
            waiter = waiting.lock(name)
            with pytest.raises(ferrolock.LockTimeoutError) as info:
                with waiter.hold(timeout=0.2):
                    pass
            seen = info.value.holder
            assert seen is not None and seen.owner == expected.owner
            assert (seen.app, seen.pid, seen.thread) == ("billing", os.getpid(), "worker-3")
            assert "(thread worker-3) for " in seen.description and seen.description in str(info.value)
            # A single try reads nothing more: no holder.
            with pytest.raises(ferrolock.LockTimeoutError) as info:
                with waiter.hold(timeout=0):
                    pass
            assert info.value.holder is None

            async def aio() -> None:
                async with await ferrolock.aio.Client.connect(url) as client:
                    with pytest.raises(ferrolock.LockTimeoutError) as info:
                        async with client.lock(name).hold(timeout=0.2):
                            pass
                    assert info.value.holder is not None and info.value.holder.thread == "worker-3"

            asyncio.run(aio())
        finally:
            done.set()
            t.join(10)


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def waiting(self, name: str) -> list[str]:
        return [
            r.getMessage()
            for r in list(self.records)
            if r.levelno == logging.INFO and r.getMessage().startswith("waiting ") and f'lock "{name}"' in r.getMessage()
        ]


def test_a_long_wait_logs_who_is_in_the_way(url: str, name: str) -> None:
    logger = logging.getLogger("ferrolock")
    handler, old = Collect(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)  # read when a client connects
    try:
        with ferrolock.Client(url, watchdog_timeout=1.5, app_name="billing", holder_note_after=0) as holding, \
                ferrolock.Client(url, watchdog_timeout=1.5, slow_wait_log=0.15) as waiting:
            lock = holding.lock(name)
            done, t = hold_in_thread(lock, "worker-3")
            try:
                noted(lock)
                waiter = waiting.lock(name)
                outcome: list[bool] = []

                def wait() -> None:
                    outcome.append(waiter.acquire(timeout=30))
                    if outcome[0]:
                        waiter.release()

                w = threading.Thread(target=wait)
                w.start()
                # The first line after 150 ms, the next after 300 ms.
                wait_until(lambda: len(handler.waiting(name)) >= 2, timeout=20, what="two slow-wait lines")
            finally:
                done.set()
                t.join(10)
            w.join(30)
            assert outcome == [True]
        first, second = handler.waiting(name)[:2]
        assert first.startswith(f'waiting 150 ms for lock "{name}": held by billing on '), first
        assert "(thread worker-3) for " in first and "lease" in first, first
        assert second.startswith(f'waiting 300 ms for lock "{name}"'), second
        [record] = [r for r in handler.records if r.getMessage() == first]
        assert record.name.startswith("ferrolock.")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)


@pytest.mark.parametrize(
    ("option", "value", "error", "text"),
    [
        ("holder_notes", "sometimes", ferrolock.InvalidArgumentError, "holder_notes"),
        ("holder_notes", "LONG", ferrolock.InvalidArgumentError, "off, long or always"),
        ("holder_notes", None, TypeError, "holder_notes"),
        ("holder_notes", 1, TypeError, "holder_notes"),
        ("holder_note_after", -1, ferrolock.InvalidArgumentError, "holder_note_after"),
        ("holder_note_after", "1", TypeError, "holder_note_after"),
        ("holder_note_after", None, TypeError, "holder_note_after"),
        ("slow_wait_log", -0.5, ferrolock.InvalidArgumentError, "slow_wait_log"),
        ("slow_wait_log", 0, ferrolock.InvalidArgumentError, "slow_wait_log"),
        ("slow_wait_log", True, TypeError, "slow_wait_log"),
    ],
)
def test_bad_options(url: str, option: str, value: Any, error: type[Exception], text: str) -> None:
    with pytest.raises(error, match=text):
        ferrolock.Client(url, **{option: value})

    async def connect() -> None:
        await ferrolock.aio.Client.connect(url, **{option: value})

    with pytest.raises(error, match=text):
        asyncio.run(connect())


def test_slow_wait_log_none_and_modes_accepted(url: str) -> None:
    for mode in ("off", "long", "always"):
        ferrolock.Client(url, holder_notes=mode, holder_note_after=0, slow_wait_log=None).close()
