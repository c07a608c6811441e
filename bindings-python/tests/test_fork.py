"""fork(): a client made before os.fork() works in the child (it connects again
there, holding nothing the parent held); the parent's holds are unaffected. Lock
objects made before the fork work in the child too, on the child's connection."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import select
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis

import ferrolock
import ferrolock.aio

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # "process is multi-threaded, fork() may deadlock"


def _in_child(body: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Runs ``body`` in a forked child and returns its report (never returns into pytest there)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read_end)
            os.write(write_end, json.dumps(body()).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    try:
        ready, _, _ = select.select([read_end], [], [], 60)
        assert ready, "the child hung"
        data = b""
        while chunk := os.read(read_end, 65536):
            data += chunk
    finally:
        os.close(read_end)
        deadline = time.monotonic() + 30
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                pytest.fail("the child did not exit")
            time.sleep(0.01)
    assert os.waitstatus_to_exitcode(status) == 0, data
    report: dict[str, Any] = json.loads(data)
    return report


def test_client_made_before_fork_works_in_the_child(client: ferrolock.Client, name: str) -> None:
    lock = client.lock(name)
    lock.acquire()
    spare = client.lock(name + ":spare")  # made before the fork, used only in the child
    parent_id = client.id
    parent_owner_count = lock.hold_count()

    def child() -> dict[str, Any]:
        report: dict[str, Any] = {
            # Nothing the parent held is the child's (before and after it connects).
            "held_before": client.held_count(),
            "owned": lock.owned(),
            "locked": lock.locked(),
        }
        report["id_changed"] = client.id != parent_id
        report["try_parent_lock"] = lock.acquire(blocking=False)
        with spare:
            report["spare_owned"] = spare.owned()
            report["held_inside"] = client.held_count()
        new = client.lock(name + ":child")
        with new.hold(timeout=5):
            report["new_owned"] = new.owned()
        report["held_after"] = client.held_count()
        client.close()
        try:
            client.lock(name)
        except ferrolock.ClientClosedError:
            report["closed_after_close"] = True
        return report

    report = _in_child(child)
    assert report == {
        "held_before": 0,
        "owned": False,
        "locked": True,
        "id_changed": True,
        "try_parent_lock": False,
        "spare_owned": True,
        "held_inside": 1,
        "new_owned": True,
        "held_after": 0,
        "closed_after_close": True,
    }
    # The parent's client and hold are unaffected, by the child's use or its close.
    assert client.id == parent_id and not client.closed
    assert lock.owned() and lock.hold_count() == parent_owner_count
    assert client.held_count() == 1
    lock.release()
    assert not lock.locked()
    assert not spare.locked()


def _mp_worker(client: ferrolock.Client, lock: ferrolock.Lock, name: str, queue: Any) -> None:
    """Runs in a multiprocessing child (fork start method): the client and lock come from the parent."""
    got = lock.acquire(blocking=False)
    with client.lock(name + ":mp"):
        queue.put((os.getpid(), client.id, got, client.held_count()))


def test_a_holder_made_again_in_the_child_keeps_its_thread_label(url: str, name: str) -> None:
    # The child's holder is made again from the parent's; the thread's name was
    # given once (the Python layer sends it only when it changes), so the native
    # holder must give it to the new one.
    client = ferrolock.Client(url, holder_notes="always")
    thread = threading.current_thread()
    old_name, thread.name = thread.name, "fork-labelled"
    try:
        lock = client.lock(name)
        assert lock.acquire(timeout=5)
        assert [h.thread for h in lock.status().holders] == ["fork-labelled"]
        lock.release()

        def child() -> dict[str, Any]:
            assert lock.acquire(timeout=5)
            threads = [h.thread for h in lock.status().holders]
            lock.release()
            return {"threads": threads}

        assert _in_child(child) == {"threads": ["fork-labelled"]}
    finally:
        thread.name = old_name
        client.close()


def test_multiprocessing_fork(client: ferrolock.Client, name: str) -> None:
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    lock = client.lock(name)
    lock.acquire()
    procs = [ctx.Process(target=_mp_worker, args=(client, lock, name, queue)) for _ in range(2)]
    for p in procs:
        p.start()
    try:
        results = [queue.get(timeout=60) for _ in procs]
    finally:
        for p in procs:
            p.join(30)
    assert [p.exitcode for p in procs] == [0, 0]
    ids = {r[1] for r in results}
    assert len(ids) == 2 and client.id not in ids  # each child connected on its own
    assert all(got is False and held == 1 for _pid, _id, got, held in results)
    assert lock.owned()
    lock.release()


def test_asyncio_client_made_before_fork(url: str, name: str) -> None:
    client = asyncio.run(ferrolock.aio.Client.connect(url, watchdog_timeout=1.5))

    async def hold_in_parent() -> ferrolock.aio.Lock:
        lock = client.lock(name, holder_id=7)  # one holder for every task: released by another run below
        await lock.acquire()
        return lock

    parent_lock = asyncio.run(hold_in_parent())

    def child() -> dict[str, Any]:
        async def main() -> dict[str, Any]:
            mine = client.lock(name + ":child")
            async with mine:
                owned = await mine.owned()
            return {
                "parent_lock_locked": await parent_lock.locked(),
                "owned": owned,
                "sees_parent_hold": not await client.lock(name).acquire(blocking=False),
            }

        report = asyncio.run(main())
        asyncio.run(client.close())
        return report

    try:
        assert _in_child(child) == {"parent_lock_locked": True, "owned": True, "sees_parent_hold": True}

        async def release() -> None:
            assert client.held_count() == 1 and await parent_lock.owned()
            await parent_lock.release()

        asyncio.run(release())
    finally:
        asyncio.run(client.close())


def test_the_family_made_before_fork_works_in_the_child(client: ferrolock.Client, r: redis.Redis, name: str) -> None:
    sem = client.semaphore(name)
    sem.try_set_permits(1)
    rw = client.read_write_lock(name + ":rw")
    latch = client.count_down_latch(name + ":latch")
    latch.try_set_count(1)
    rw.read_lock().acquire()
    try:

        def body() -> dict[str, Any]:
            # The child's holder is another one: the parent's read hold lets it read, not write.
            report = {
                "took": sem.acquire(timeout=5.0),
                "read": rw.read_lock().acquire(timeout=5.0),
                "write": rw.write_lock().acquire(timeout=0.05),
                "left": latch.count_down(),
            }
            rw.read_lock().release()
            client.close()
            return report

        assert _in_child(body) == {"took": True, "read": True, "write": False, "left": 0}
        assert sem.available() == 0  # taken in the child: permits are nobody's
        assert latch.wait(0)
        assert rw.read_lock().owned()
    finally:
        rw.read_lock().release()
        for key in list(r.scan_iter(match=f"*{name}*")):
            r.delete(key)
