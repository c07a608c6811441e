"""How long a hold lasts: until it is released, its explicit lease ends, or the
client is closed (or dropped). Never because a lock object is garbage-collected,
nor because the thread or asyncio task that holds it ends (that is logged)."""

from __future__ import annotations

import asyncio
import gc
import logging
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator

import pytest
import redis

import ferrolock
import ferrolock.aio
from conftest import WATCHDOG
from helpers import kept_in_thread, wait_until


@pytest.fixture
def own(url: str) -> Iterator[ferrolock.Client]:
    """A client the test closes itself (the fixture closes it too, if the test failed)."""
    c = ferrolock.Client(url, watchdog_timeout=WATCHDOG)
    try:
        yield c
    finally:
        c.close()


def _ended_warnings(caplog: pytest.LogCaptureFixture, kind: str) -> list[str]:
    return [
        rec.getMessage()
        for rec in caplog.records
        if rec.name == "ferrolock" and rec.levelno == logging.WARNING and f"{kind} " in rec.getMessage()
        and "ended while holding" in rec.getMessage()
    ]


async def eventually(predicate: Callable[[], bool], timeout: float = 5.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.005)


def test_a_collected_temporary_lock_object_keeps_its_hold(
    own: ferrolock.Client, client2: ferrolock.Client, r: redis.Redis, name: str
) -> None:
    lost = threading.Event()
    ran = False
    if own.lock(name, on_lost=lambda _lock: lost.set()).acquire(blocking=False):
        ran = True
    assert ran
    gc.collect()
    other = client2.lock(name)
    assert not other.acquire(blocking=False)
    assert own.held_count() == 1
    # Kept alive by its client, the object still hears about a loss of its hold.
    assert other.force_unlock()
    assert lost.wait(WATCHDOG * 3)
    wait_until(lambda: own.held_count() == 0, what="the lost hold to be forgotten")

    # Another temporary object: this time its hold lasts until the client closes.
    assert own.lock(name).acquire(blocking=False)
    gc.collect()
    wait_until(lambda: r.pttl(name) > 0, what="the lock to be in Redis")
    assert not other.acquire(blocking=False)
    own.close()
    assert other.acquire(blocking=False)
    other.release()


def test_a_lock_object_is_kept_only_while_it_holds(client: ferrolock.Client, client2: ferrolock.Client, name: str) -> None:
    lock = client.lock(name, on_lost=lambda _lock: None)
    ref = weakref.ref(lock)
    assert lock.acquire()
    with lock:
        pass
    lock.release()
    # Released in another thread as well, and through the context managers.
    def elsewhere() -> None:
        assert lock.acquire()
        lock.release()

    t = threading.Thread(target=elsewhere)
    t.start()
    t.join(10)
    with lock.hold(timeout=5):
        pass
    # NotOwnedError on a release leaves nothing tracked either.
    with pytest.raises(ferrolock.NotOwnedError):
        lock.release()
    del lock, t
    gc.collect()
    assert ref() is None, "a released lock object is still referenced"

    # A lock object whose hold was lost is let go as well.
    lost = threading.Event()
    lock = client.lock(name, on_lost=lambda _lock: lost.set())
    ref = weakref.ref(lock)
    assert lock.acquire()
    del lock
    gc.collect()
    assert ref() is not None, "a holding lock object was not kept"
    assert client2.lock(name).force_unlock()
    assert lost.wait(WATCHDOG * 3)

    def collected() -> bool:
        gc.collect()
        return ref() is None

    wait_until(collected, what="the lost lock object to be collectable")


def test_a_thread_that_ends_while_holding_keeps_the_hold(
    own: ferrolock.Client, client2: ferrolock.Client, name: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="ferrolock")
    lock = own.lock(name)
    temp_name = f"{name}:temp"

    def work() -> None:
        assert lock.acquire()
        assert lock.acquire()  # two levels
        # And a lock object nobody keeps.
        assert own.lock(temp_name).acquire(blocking=False)

    t = threading.Thread(target=work, name="nightly-worker")
    t.start()
    t.join(10)
    assert not t.is_alive()

    def warned() -> bool:
        return len(_ended_warnings(caplog, "thread")) == 2

    wait_until(warned, what="the warnings about the ended thread")
    gc.collect()
    messages = _ended_warnings(caplog, "thread")
    for lock_name in (name, temp_name):
        [message] = [m for m in messages if f'lock "{lock_name}"' in m]
        assert 'thread "nightly-worker"' in message
        assert f"owner {own.id}:" in message  # the holder's owner field
        assert "until the client is closed" in message
    assert "2 level(s)" in [m for m in messages if f'lock "{name}"' in m][0]

    # The hold stays: other clients are excluded, and it is not this thread's to release.
    other = client2.lock(name)
    assert not other.acquire(blocking=False)
    assert not client2.lock(temp_name).acquire(blocking=False)
    assert lock.locked()
    assert not lock.owned()
    with pytest.raises(ferrolock.NotOwnedError):
        lock.release()
    assert own.held_count() == 2

    own.close()
    assert other.acquire(blocking=False)
    other.release()
    with client2.lock(temp_name).hold(timeout=5):
        pass


def test_a_thread_that_releases_before_it_ends_logs_nothing(
    client: ferrolock.Client, name: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="ferrolock")
    lock = client.lock(name)
    # A thread that ended while holding, in another test, is logged (see above):
    # this one released, so it is not.
    done = threading.Event()

    def work() -> None:
        with lock:
            pass
        done.set()

    t = threading.Thread(target=work, name="tidy-worker")
    t.start()
    t.join(10)
    assert done.is_set()
    # A second thread that ends holding is logged: once it is, the first one would have been too.
    marker = client.lock(f"{name}:marker")
    t2 = threading.Thread(target=marker.acquire, name="marker-worker")
    t2.start()
    t2.join(10)
    wait_until(lambda: any("marker-worker" in m for m in _ended_warnings(caplog, "thread")), what="the marker warning")
    assert not any("tidy-worker" in m for m in _ended_warnings(caplog, "thread"))
    marker.force_unlock()
    wait_until(lambda: client.held_count() == 0, what="the marker hold to be lost")


def test_dropping_the_client_ends_its_holds(url: str, client2: ferrolock.Client, name: str) -> None:
    dropped = ferrolock.Client(url, watchdog_timeout=WATCHDOG)
    assert dropped.lock(name).acquire()
    other = client2.lock(name)
    assert not other.acquire(blocking=False)
    ref = weakref.ref(dropped)
    del dropped
    gc.collect()
    assert ref() is None, "the client (with the lock objects it keeps) was not collected"
    # The core client shuts down once its last handle is gone, releasing the hold.
    assert other.acquire(timeout=10)
    other.release()


def test_a_collected_lock_object_leaves_the_threads_that_used_it(
    url: str, client2: ferrolock.Client, name: str
) -> None:
    # The threads keep their slots (and native holders) per thread, not per lock
    # object: collecting the object must drop its holders from a thread that is
    # still alive, or they would keep the dropped client's core running.
    dropped = ferrolock.Client(url, watchdog_timeout=WATCHDOG)
    lock = dropped.lock(name)

    def use() -> None:
        assert lock.acquire(lease=60)
        lock.release()

    with kept_in_thread(use, "still-alive"):
        assert lock.acquire()  # this thread's own slot too; the client keeps the object while it holds
        other = client2.lock(name)
        assert not other.acquire(blocking=False)
        ref = weakref.ref(dropped)
        del dropped, lock
        gc.collect()
        assert ref() is None, "the client (with the lock objects it keeps) was not collected"
        assert other.acquire(timeout=10)
        other.release()


def test_exiting_with_lock_objects_kept_past_the_modules_is_quiet(url: str) -> None:
    # A function of __main__ kept by a class of ferrolock keeps __main__'s globals
    # (the lock objects, the module) until the modules' globals are cleared at
    # exit: the main thread's slots (made by the acquires) then go after the
    # module's globals did. Nothing may be reported.
    script = (
        "import sys, ferrolock\n"
        "import ferrolock._lock as lock_module\n"
        "client = ferrolock.Client(sys.argv[1])\n"
        "held = [client.lock(f'test:exit:{i}') for i in range(3)]\n"
        "for lock in held:\n"
        "    assert lock.acquire(lease=30)\n"
        "    lock.release()\n"
        "lock_module._Holdable._test_extra = lambda self: None\n"
        "print('done')\n"
    )
    out = subprocess.run([sys.executable, "-c", script, url], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "done"
    assert "Exception ignored" not in out.stderr and "Traceback" not in out.stderr, out.stderr


def _run_aio(main: Callable[[ferrolock.aio.Client], Awaitable[None]], url: str) -> None:
    async def wrapper() -> None:
        client = await ferrolock.aio.Client.connect(url, watchdog_timeout=WATCHDOG)
        try:
            await main(client)
        finally:
            await client.close()

    asyncio.run(wrapper())


def test_a_task_that_ends_while_holding_keeps_the_hold(
    url: str, client2: ferrolock.Client, name: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="ferrolock")
    other = client2.lock(name)

    async def main(client: ferrolock.aio.Client) -> None:
        lock = client.lock(name)

        async def work() -> None:
            assert await lock.acquire()

        await asyncio.create_task(work(), name="nightly-task")
        await eventually(lambda: len(_ended_warnings(caplog, "task")) == 1, what="the warning about the ended task")
        [message] = _ended_warnings(caplog, "task")
        assert 'task "nightly-task"' in message
        assert f'lock "{name}"' in message
        assert f"owner {client.id}:" in message
        gc.collect()
        assert not await asyncio.to_thread(other.acquire, False)
        assert await lock.locked()
        assert not await lock.owned()
        with pytest.raises(ferrolock.NotOwnedError):
            await lock.release()
        assert client.held_count() == 1

        # A temporary lock object of a task that ends: kept as well.
        async def temp() -> None:
            assert await client.lock(f"{name}:temp").acquire(blocking=False)

        await asyncio.create_task(temp(), name="temp-task")
        gc.collect()
        await eventually(lambda: len(_ended_warnings(caplog, "task")) == 2, what="the warning about the second task")
        assert client.held_count() == 2
        await client.close()

        # In one thread: a sync lock's holder is (lock object, thread), and two
        # asyncio.to_thread calls may run on two executor threads.
        def acquire_and_release() -> bool:
            acquired = other.acquire(False)
            if acquired:
                other.release()
            return acquired

        assert await asyncio.to_thread(acquire_and_release)

    _run_aio(main, url)
    assert not client2.lock(f"{name}:temp").locked()


def _watch(lock: ferrolock.aio.Lock, task: asyncio.Task[object]) -> object:
    """The done-callback watching ``task``'s end for ``lock`` (None: none)."""
    slot = lock._slot_of(task)
    assert slot is not None
    return slot.watch


def test_a_released_asyncio_lock_object_is_collectable(url: str, client2: ferrolock.Client, name: str) -> None:
    async def main(client: ferrolock.aio.Client) -> None:
        lock = client.lock(name)
        ref = weakref.ref(lock)
        task = asyncio.current_task()
        assert task is not None
        assert await lock.acquire()
        # The task's end is watched only while it holds (no pile-up of callbacks
        # on a long-lived task that uses many lock objects).
        assert _watch(lock, task) is not None
        async with lock:
            pass
        assert _watch(lock, task) is not None
        await lock.release()
        assert _watch(lock, task) is None
        async with lock.hold(timeout=5):
            pass
        await asyncio.create_task(lock.acquire())  # another task, which ends holding ...
        assert client.held_count() == 1
        assert await lock.force_unlock()  # ... until its hold is lost
        await eventually(lambda: client.held_count() == 0, what="the lost hold to be forgotten")
        del lock
        await eventually(lambda: gc.collect() >= 0 and ref() is None, what="the lock object to be collectable")
        assert client.held_count() == 0

        # A collected temporary object keeps its hold in a task that lives on.
        assert await client.lock(name).acquire(blocking=False)
        gc.collect()
        assert not await asyncio.to_thread(client2.lock(name).acquire, False)
        await client.close()

    _run_aio(main, url)
    assert not client2.lock(name).locked()
