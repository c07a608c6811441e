"""The blocking API: exclusion, re-entrancy, identity, timeouts, leases, lost locks."""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time

import pytest
import redis

import ferrolock
from conftest import WATCHDOG
from helpers import interrupt_when, wait_until
from workers import fenced_worker

THREADS = 8
INCREMENTS = 100


def _run_threads(targets: list[threading.Thread]) -> None:
    for t in targets:
        t.start()
    for t in targets:
        t.join(timeout=60)
        assert not t.is_alive(), "a worker thread did not finish"


def test_threads_exclude_each_other_through_one_object(client: ferrolock.Client, r: redis.Redis, name: str) -> None:
    lock = client.lock(name)
    counter = f"{name}:counter"
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(INCREMENTS):
                with lock:
                    value = int(r.get(counter) or 0)  # read ...
                    r.set(counter, value + 1)  # ... modify, write: not atomic
        except BaseException as e:  # reported below
            errors.append(e)

    _run_threads([threading.Thread(target=work) for _ in range(THREADS)])
    assert errors == []
    assert int(r.get(counter) or 0) == THREADS * INCREMENTS
    assert not lock.locked()
    r.delete(counter)


def test_threads_with_their_own_clients_exclude_each_other(url: str, r: redis.Redis, name: str) -> None:
    counter = f"{name}:counter"
    clients = [ferrolock.Client(url, watchdog_timeout=WATCHDOG) for _ in range(THREADS)]
    errors: list[BaseException] = []

    def work(c: ferrolock.Client) -> None:
        lock = c.lock(name)
        try:
            for _ in range(INCREMENTS // 2):
                with lock:
                    value = int(r.get(counter) or 0)
                    r.set(counter, value + 1)
        except BaseException as e:
            errors.append(e)

    try:
        _run_threads([threading.Thread(target=work, args=(c,)) for c in clients])
        assert errors == []
        assert int(r.get(counter) or 0) == THREADS * (INCREMENTS // 2)
        for c in clients:
            wait_until(lambda: c.subscribed_channels() == 0, what="waiters to unsubscribe")
            assert c.held_count() == 0
    finally:
        for c in clients:
            c.close()
        r.delete(counter)


def test_reentrancy(client: ferrolock.Client, name: str) -> None:
    lock = client.lock(name)
    assert lock.acquire()
    assert lock.acquire()
    with lock:
        assert lock.hold_count() == 3
        assert lock.owned()
    assert lock.hold_count() == 2
    lock.release()
    assert lock.locked()
    lock.release()
    assert not lock.locked()
    assert not lock.owned()
    assert lock.hold_count() == 0
    with pytest.raises(ferrolock.NotOwnedError):
        lock.release()


def test_two_objects_for_one_name_exclude_each_other_in_one_thread(client: ferrolock.Client, name: str) -> None:
    a = client.lock(name)
    b = client.lock(name)
    with a:
        assert not b.acquire(blocking=False)
        assert not b.owned()
        with pytest.raises(ferrolock.NotOwnedError):
            b.release()
        assert a.owned()
    assert b.acquire(blocking=False)
    b.release()


def test_one_object_excludes_other_threads_and_reenters_in_its_own(client: ferrolock.Client, name: str) -> None:
    lock = client.lock(name)
    seen: dict[str, object] = {}

    def other() -> None:
        seen["acquired"] = lock.acquire(blocking=False)
        seen["owned"] = lock.owned()
        seen["count"] = lock.hold_count()
        try:
            lock.release()
        except ferrolock.NotOwnedError as e:
            seen["release"] = e

    with lock:
        t = threading.Thread(target=other)
        t.start()
        t.join(10)
        assert lock.acquire(blocking=False)  # re-entry in this thread
        assert lock.hold_count() == 2
        lock.release()
    assert seen["acquired"] is False
    assert seen["owned"] is False
    assert seen["count"] == 0
    assert isinstance(seen["release"], ferrolock.NotOwnedError)


def test_clients_exclude_each_other(client: ferrolock.Client, client2: ferrolock.Client, name: str) -> None:
    a = client.lock(name)
    b = client2.lock(name)
    with a:
        assert not b.acquire(blocking=False)
    assert b.acquire(blocking=False)
    assert not a.acquire(blocking=False)
    b.release()


def test_explicit_holder_id_hands_over_between_threads(client: ferrolock.Client, name: str) -> None:
    lock = client.lock(name, holder_id=424242)
    assert lock.acquire()
    result: list[BaseException | None] = []

    def release_elsewhere() -> None:
        try:
            lock.release()
            result.append(None)
        except BaseException as e:
            result.append(e)

    t = threading.Thread(target=release_elsewhere)
    t.start()
    t.join(10)
    assert result == [None]
    assert not lock.locked()


def test_timeouts_and_nonblocking(client: ferrolock.Client, client2: ferrolock.Client, name: str) -> None:
    holder = client.lock(name)
    other = client2.lock(name)
    assert holder.acquire()
    start = time.monotonic()
    assert not other.acquire(blocking=False)
    assert time.monotonic() - start < 0.5
    start = time.monotonic()
    assert not other.acquire(timeout=0.3)
    elapsed = time.monotonic() - start
    assert 0.29 <= elapsed < 2.0
    with pytest.raises(ferrolock.LockTimeoutError) as info:
        with other.hold(timeout=0.1):
            pass
    assert isinstance(info.value, TimeoutError)
    with pytest.raises(ferrolock.InvalidArgumentError):
        other.acquire(blocking=False, timeout=1.0)
    holder.release()
    with other.hold(timeout=1.0) as same:
        assert same is other
        assert other.owned()
    assert not other.locked()


def test_waiter_wakes_on_release(client: ferrolock.Client, client2: ferrolock.Client, name: str) -> None:
    holder = client.lock(name)
    waiter = client2.lock(name)
    holder.acquire()
    got: list[float] = []

    def wait_for_it() -> None:
        if waiter.acquire(timeout=20):
            got.append(time.monotonic())
            waiter.release()

    t = threading.Thread(target=wait_for_it)
    t.start()
    wait_until(lambda: client2.subscribed_channels() == 1, what="the waiter to subscribe")
    released_at = time.monotonic()
    holder.release()
    t.join(20)
    assert len(got) == 1
    # Woken by the release message, not by the 1.5 s lease running out.
    assert got[0] - released_at < 0.5


def test_explicit_lease_expires(client: ferrolock.Client, client2: ferrolock.Client, name: str) -> None:
    lost = threading.Event()
    short = client.lock(name, on_lost=lambda _lock: lost.set())
    assert short.acquire(lease=0.5)
    remaining = short.remaining_lease()
    assert remaining is not None and 0 < remaining <= 0.5
    start = time.monotonic()
    other = client2.lock(name)
    # Nothing is published when a lock expires: the waiter wakes by the TTL.
    assert other.acquire(timeout=5)
    assert 0.3 <= time.monotonic() - start < 3
    assert lost.wait(5)
    assert short.lost
    with pytest.raises(ferrolock.LockLostError):
        short.release()
    assert other.owned()
    other.release()


def test_force_unlock_by_another_client_is_reported(
    client: ferrolock.Client, client2: ferrolock.Client, name: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="ferrolock")
    calls: list[tuple[ferrolock.Lock, bool, bool]] = []
    lost = threading.Event()

    def on_lost(lock: ferrolock.Lock) -> None:
        # Blocking calls work from the callback's background thread.
        calls.append((lock, threading.current_thread() is threading.main_thread(), lock.locked()))
        lost.set()

    lock = client.lock(name, on_lost=on_lost)
    lock.acquire()
    assert not lock.lost
    assert client2.lock(name).force_unlock()
    # The watchdog renews every WATCHDOG / 3 s and finds the hold gone.
    assert lost.wait(WATCHDOG * 3)
    assert calls == [(lock, False, False)]
    assert lock.lost
    assert not lock.owned()
    with pytest.raises(ferrolock.LockLostError) as info:
        lock.release()
    assert name in str(info.value)
    # The core's warning, through the log bridge (delivered by its own thread).
    wait_until(
        lambda: any(
            rec.name.startswith("ferrolock.") and rec.levelno == logging.WARNING and name in rec.getMessage()
            for rec in caplog.records
        ),
        what="the loss warning on a ferrolock logger",
    )
    # A new acquisition clears the lost flag.
    assert lock.acquire(blocking=False)
    assert not lock.lost
    lock.release()
    assert not lock.force_unlock()


def test_fenced_tokens_increase_across_processes(url: str, r: redis.Redis, name: str) -> None:
    log = f"{name}:tokens"
    ctx = multiprocessing.get_context("spawn")
    rounds = 10
    procs = [ctx.Process(target=fenced_worker, args=(url, name, log, rounds)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    entries = [(e.decode() if isinstance(e, bytes) else e).split(":") for e in r.lrange(log, 0, -1)]
    tokens = [int(token) for _pid, token in entries]
    assert len(tokens) == 4 * rounds
    # Written inside the critical sections, in the order they ran: strictly increasing.
    assert tokens == sorted(tokens) and len(set(tokens)) == len(tokens)
    assert len({pid for pid, _token in entries}) == 4
    r.delete(log)


def test_fenced_lock_token_in_this_process(client: ferrolock.Client, name: str) -> None:
    lock = client.fenced_lock(name)
    assert lock.fenced
    assert lock.token is None
    with lock:
        first = lock.token
        assert first is not None
    assert lock.token is None
    with lock:
        second = lock.token
        assert second is not None and second > first


def _voluntary_switches(tid: int) -> int:
    """How often thread ``tid`` of this process gave up its CPU (Linux)."""
    with open(f"/proc/self/task/{tid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("voluntary_ctxt_switches:"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads a thread's context switches in /proc")
def test_a_thread_other_than_the_main_one_waits_without_looking_for_signals(
    client: ferrolock.Client, client2: ferrolock.Client, name: str
) -> None:
    # Python runs signal handlers on its main thread only: another thread's wait
    # does not wake 50 times a second to look for Ctrl-C (a GIL round and a poll of
    # the call each time, CPU taken from the holders).
    other = client2.lock(name)
    assert other.acquire()
    lock = client.lock(name)
    tids: list[int] = []

    def wait() -> None:
        tids.append(threading.get_native_id())
        assert lock.acquire(timeout=30)
        lock.release()

    t = threading.Thread(target=wait)
    t.start()
    try:
        wait_until(lambda: client.metrics().waiters_now == 1, what="the thread to wait")
        before = _voluntary_switches(tids[0])
        threading.Event().wait(1.0)  # the span the wake-ups are counted over
        woke = _voluntary_switches(tids[0]) - before
    finally:
        other.release()
        t.join(10)
    assert not t.is_alive()
    # 50 and more when it looked every 20 ms; about 10 now (core's check for overdue replies).
    assert woke < 30, f"the waiting thread woke {woke} times in 1 s"


def test_keyboard_interrupt_stops_a_wait_and_leaves_nothing_held(client: ferrolock.Client, name: str) -> None:
    holder = client.lock(name)
    waiter = client.lock(name)
    holder.acquire()
    sent_at, interrupted_at = interrupt_when(lambda: client.subscribed_channels() == 1, waiter.acquire, "the main thread to wait")
    assert interrupted_at - sent_at < 0.1
    assert waiter.hold_count() == 0
    wait_until(lambda: client.subscribed_channels() == 0, what="the interrupted waiter to unsubscribe")
    assert holder.owned()
    holder.release()
    assert not holder.locked()
