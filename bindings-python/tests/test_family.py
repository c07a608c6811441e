"""The rest of Redisson's family, blocking API: the fair lock, the read-write lock,
the semaphore, the permit-expirable semaphore and the count-down latch."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator

import pytest
import redis

import ferrolock
from conftest import WATCHDOG
from helpers import wait_until

# A bound on waits that must end by a message: far shorter than any lease or
# expiry in play (LONG_LEASE), so that only the message can end them in time.
WAKE_BOUND = 10.0
LONG_LEASE = 120.0


@pytest.fixture(autouse=True)
def _no_keys_left(r: redis.Redis, name: str) -> Iterator[None]:
    """Semaphores and latches outlive their users by design: delete every key of
    this test's names, so that the suite's end-of-run check sees a clean server."""
    yield
    for key in list(r.scan_iter(match=f"*{name}*", count=1000)):
        r.delete(key)


def _thread(target: Callable[[], object], errors: list[BaseException]) -> threading.Thread:
    def run() -> None:
        try:
            target()
        except BaseException as e:  # reported by the test
            errors.append(e)

    t = threading.Thread(target=run)
    t.start()
    return t


def _join(threads: list[threading.Thread], errors: list[BaseException]) -> None:
    for t in threads:
        t.join(timeout=60)
        assert not t.is_alive(), "a thread did not finish"
    assert errors == []


# ---------------------------------------------------------------------------
# The fair lock.


def test_fair_lock_is_a_lock(client: ferrolock.Client, name: str) -> None:
    fair = client.fair_lock(name)
    assert fair.kind == "fair" and not fair.fenced and fair.name == name
    assert repr(fair) == f"<ferrolock.Lock fair lock {name!r}>"
    with fair:
        assert fair.owned() and fair.locked() and fair.hold_count() == 1
        assert fair.acquire(blocking=False)  # re-entrant per thread
        fair.release()
        status = fair.status()
        assert [h.count for h in status.holders] == [1]
    with fair.hold(timeout=1.0, lease=LONG_LEASE):
        assert fair.extend(5.0) > LONG_LEASE
        other = client.fair_lock(name)
        assert not other.acquire(timeout=0.05)
        with pytest.raises(ferrolock.LockTimeoutError):
            with other.hold(timeout=0.05):
                pass
    with pytest.raises(ferrolock.NotOwnedError):
        fair.release()
    assert not fair.locked()


def test_fair_lock_grants_in_order_of_arrival_across_three_clients(
    client: ferrolock.Client, client2: ferrolock.Client, url: str, r: redis.Redis, name: str
) -> None:
    client3 = ferrolock.Client(url, watchdog_timeout=WATCHDOG)
    try:
        holder = client.fair_lock(name)
        holder.acquire()
        order: list[str] = []
        errors: list[BaseException] = []
        queue = f"redisson_lock_queue:{{{name}}}"
        threads: list[threading.Thread] = []
        for label, c in (("c2", client2), ("c3", client3), ("c1", client), ("c2b", client2)):
            lock = c.fair_lock(name)

            def take(lock: ferrolock.Lock = lock, label: str = label) -> None:
                assert lock.acquire(timeout=WAKE_BOUND)
                order.append(label)
                lock.release()

            queued = len(threads) + 1
            threads.append(_thread(take, errors))
            # The next waiter only arrives once this one is in the queue.
            wait_until(lambda: r.llen(queue) == queued, what=f"waiter {label} in the fair queue")
        holder.release()
        _join(threads, errors)
        assert order == ["c2", "c3", "c1", "c2b"]
    finally:
        client3.close()


# ---------------------------------------------------------------------------
# The read-write lock.


def test_readers_together_writer_alone(client: ferrolock.Client, client2: ferrolock.Client, name: str) -> None:
    rw1, rw2 = client.read_write_lock(name), client2.read_write_lock(name)
    assert rw1.read_lock() is rw1.read_lock() and rw1.name == name and rw1.client is client
    assert rw1.read_lock().kind == "read" and rw1.write_lock().kind == "write"
    assert repr(rw1) == f"<ferrolock.ReadWriteLock {name!r}>"
    with rw1.read_lock():
        with rw2.read_lock():  # readers together
            assert len(rw1.read_lock().status().holders) == 2
            assert not rw2.write_lock().acquire(timeout=0.05)
        assert not rw2.write_lock().acquire(blocking=False)  # a reader is enough to keep a writer out
    with rw2.write_lock():  # the writer alone
        assert not rw1.read_lock().acquire(timeout=0.05)
        assert not rw1.write_lock().acquire(blocking=False)
        # The writer's own read holds are allowed (one holder for both sides).
        with rw2.read_lock():
            assert rw2.read_lock().owned()
    assert not rw1.read_lock().locked()


def test_read_write_holder_is_the_object_and_the_thread(client: ferrolock.Client, name: str) -> None:
    rw = client.read_write_lock(name)
    rw.write_lock().acquire()
    try:
        seen: list[bool] = []
        errors: list[BaseException] = []
        # Another thread of the same object is another holder: kept out.
        _join([_thread(lambda: seen.append(rw.read_lock().acquire(timeout=0.05)), errors)], errors)
        assert seen == [False]
        # A downgrade: read while writing, then stop writing and keep reading.
        rw.read_lock().acquire()
    finally:
        rw.write_lock().release()
    try:
        other = client.read_write_lock(name)
        assert other.read_lock().acquire(timeout=1.0)  # readers together again
        other.read_lock().release()
    finally:
        rw.read_lock().release()


def test_a_read_write_lock_wakes_its_waiter_by_message(client: ferrolock.Client, client2: ferrolock.Client, name: str) -> None:
    reader = client.read_write_lock(name).read_lock()
    writer = client2.read_write_lock(name).write_lock()
    reader.acquire(lease=LONG_LEASE)
    errors: list[BaseException] = []
    took: list[float] = []

    def write() -> None:
        start = time.monotonic()
        assert writer.acquire(timeout=WAKE_BOUND)
        took.append(time.monotonic() - start)
        writer.release()

    t = _thread(write, errors)
    wait_until(lambda: client2.subscribed_channels() == 1, what="the writer to wait")
    reader.release()
    _join([t], errors)
    assert took and took[0] < WAKE_BOUND


# ---------------------------------------------------------------------------
# The semaphore.


def test_semaphore_verbs(client: ferrolock.Client, name: str) -> None:
    sem = client.semaphore(name)
    assert sem.name == name and sem.client is client and repr(sem) == f"<ferrolock.Semaphore {name!r}>"
    assert sem.available() == 0  # does not exist: no permits
    assert not sem.acquire(blocking=False)
    assert sem.try_set_permits(3)
    assert not sem.try_set_permits(5)  # exists: left alone
    assert sem.available() == 3
    assert sem.acquire(permits=2)
    assert sem.available() == 1
    assert not sem.acquire(timeout=0.05, permits=2)
    assert sem.acquire(blocking=False)
    assert sem.release(3) == 3
    with sem:
        assert sem.available() == 2
    with sem.hold(timeout=1.0, permits=3):
        assert sem.available() == 0
        with pytest.raises(ferrolock.LockTimeoutError):
            with sem.hold(timeout=0.05):
                pass
    assert sem.drain() == 3
    assert sem.available() == 0
    assert sem.release() == 1  # permits are nobody's: anyone may add one


def test_semaphore_limits_under_contention(client: ferrolock.Client, client2: ferrolock.Client, name: str) -> None:
    permits, threads_n, rounds = 2, 6, 8
    client.semaphore(name).try_set_permits(permits)
    inside = 0
    most = 0
    mutex = threading.Lock()
    errors: list[BaseException] = []

    def work(c: ferrolock.Client) -> None:
        nonlocal inside, most
        sem = c.semaphore(name)
        for _ in range(rounds):
            with sem:
                with mutex:
                    inside += 1
                    most = max(most, inside)
                time.sleep(0.005)
                with mutex:
                    inside -= 1

    _join([_thread(functools.partial(work, c), errors) for c in [client, client2] * (threads_n // 2)], errors)
    assert 1 <= most <= permits
    assert client.semaphore(name).available() == permits


def test_semaphore_wakes_its_waiter_by_message(client: ferrolock.Client, client2: ferrolock.Client, name: str) -> None:
    sem = client.semaphore(name)
    sem.try_set_permits(0)
    errors: list[BaseException] = []
    took: list[bool] = []
    t = _thread(lambda: took.append(client2.semaphore(name).acquire(timeout=WAKE_BOUND, permits=2)), errors)
    wait_until(lambda: client2.subscribed_channels() == 1, what="the waiter to subscribe")
    sem.release()
    assert sem.available() == 1  # one is not enough for the waiter
    sem.release()
    _join([t], errors)
    assert took == [True] and sem.available() == 0


# ---------------------------------------------------------------------------
# The permit-expirable semaphore.


def test_permit_expirable_semaphore_verbs(client: ferrolock.Client, name: str) -> None:
    ps = client.permit_expirable_semaphore(name)
    assert ps.name == name and repr(ps) == f"<ferrolock.PermitExpirableSemaphore {name!r}>"
    assert ps.try_set_permits(2) and not ps.try_set_permits(1)
    permit = ps.acquire()
    assert isinstance(permit, ferrolock.Permit) and len(permit.id) == 32 and permit.lease is None
    assert permit.name == name
    second = ps.acquire(timeout=1.0, lease=LONG_LEASE)
    assert second is not None and second.lease == LONG_LEASE
    assert ps.available() == 0
    assert ps.acquire(timeout=0.05) is None
    assert ps.release(permit)
    assert not ps.release(permit)  # released already
    assert ps.release(second.id)  # by id, as another process would
    assert ps.available() == 2
    with ps.hold(timeout=1.0) as held:
        assert ps.available() == 1 and len(held.id) == 32
    with ps.hold(lease=LONG_LEASE):
        with ps.hold():
            with pytest.raises(ferrolock.LockTimeoutError):
                with ps.hold(timeout=0.05):
                    pass
    assert ps.available() == 2


def test_a_permit_with_a_lease_comes_back_by_itself(client: ferrolock.Client, client2: ferrolock.Client, name: str) -> None:
    ps = client.permit_expirable_semaphore(name)
    ps.try_set_permits(1)
    permit = ps.acquire(lease=0.3)
    assert permit is not None
    # The waiter wakes by the expiry (no release ever comes).
    start = time.monotonic()
    again = client2.permit_expirable_semaphore(name).acquire(timeout=WAKE_BOUND)
    assert again is not None and time.monotonic() - start < WAKE_BOUND
    assert not ps.release(permit)  # it had expired
    assert ps.release(again)


def test_permit_expirable_semaphore_wakes_its_waiter_by_message(
    client: ferrolock.Client, client2: ferrolock.Client, name: str
) -> None:
    ps = client.permit_expirable_semaphore(name)
    ps.try_set_permits(1)
    permit = ps.acquire(lease=LONG_LEASE)
    assert permit is not None
    got: list[ferrolock.Permit | None] = []
    errors: list[BaseException] = []
    t = _thread(lambda: got.append(client2.permit_expirable_semaphore(name).acquire(timeout=WAKE_BOUND)), errors)
    wait_until(lambda: client2.subscribed_channels() == 1, what="the waiter to subscribe")
    assert ps.release(permit)
    _join([t], errors)
    assert got[0] is not None
    assert ps.release(got[0])


def test_permit_semaphore_limits_under_contention(client: ferrolock.Client, client2: ferrolock.Client, name: str) -> None:
    client.permit_expirable_semaphore(name).try_set_permits(2)
    inside = most = 0
    mutex = threading.Lock()
    errors: list[BaseException] = []

    def work(c: ferrolock.Client) -> None:
        nonlocal inside, most
        ps = c.permit_expirable_semaphore(name)
        for _ in range(6):
            with ps.hold(lease=LONG_LEASE):
                with mutex:
                    inside += 1
                    most = max(most, inside)
                time.sleep(0.005)
                with mutex:
                    inside -= 1

    _join([_thread(functools.partial(work, c), errors) for c in [client, client2] * 3], errors)
    assert 1 <= most <= 2
    assert client.permit_expirable_semaphore(name).available() == 2


# ---------------------------------------------------------------------------
# The count-down latch.


def test_count_down_latch_verbs(client: ferrolock.Client, name: str) -> None:
    latch = client.count_down_latch(name)
    assert latch.name == name and repr(latch) == f"<ferrolock.CountDownLatch {name!r}>"
    assert latch.count() == 0 and latch.wait(0)  # does not exist: open
    assert latch.try_set_count(2)
    assert not latch.try_set_count(5)
    assert latch.count() == 2
    assert not latch.wait(0.05)
    assert latch.count_down() == 1
    assert latch.count_down() == 0
    assert latch.wait(0) and latch.wait()
    assert latch.count_down() == 0  # open already
    assert latch.try_set_count(1)  # open again: may be set again
    assert latch.count_down() == 0


def test_count_down_latch_wakes_every_waiter_by_message(
    client: ferrolock.Client, client2: ferrolock.Client, name: str
) -> None:
    latch = client.count_down_latch(name)
    latch.try_set_count(2)
    opened: list[bool] = []
    errors: list[BaseException] = []
    def wait(c: ferrolock.Client) -> None:
        opened.append(c.count_down_latch(name).wait(WAKE_BOUND))

    waiters = [_thread(functools.partial(wait, c), errors) for c in (client, client2)]
    wait_until(
        lambda: client.subscribed_channels() == 1 and client2.subscribed_channels() == 1, what="both waiters to wait"
    )
    latch.count_down()
    assert opened == []  # still counting down
    client2.count_down_latch(name).count_down()
    _join(waiters, errors)
    assert opened == [True, True]


# ---------------------------------------------------------------------------
# Errors, each from a real cause.


def test_wrong_type_keys(client: ferrolock.Client, r: redis.Redis, name: str) -> None:
    r.hset(name, "field", "1")
    with pytest.raises(ferrolock.WrongTypeError):
        client.semaphore(name).available()
    with pytest.raises(ferrolock.WrongTypeError):
        client.semaphore(name).acquire(timeout=0.05)
    with pytest.raises(ferrolock.WrongTypeError):
        client.permit_expirable_semaphore(name).acquire(timeout=0.05)
    with pytest.raises(ferrolock.WrongTypeError):
        client.count_down_latch(name).count()
    r.delete(name)
    r.set(name, "not a number")
    with pytest.raises(ferrolock.WrongTypeError):
        client.semaphore(name).acquire(blocking=False)
    with pytest.raises(ferrolock.WrongTypeError):
        client.permit_expirable_semaphore(name).available()
    with pytest.raises(ferrolock.WrongTypeError):
        client.count_down_latch(name).count_down()
    with pytest.raises(ferrolock.WrongTypeError):
        client.count_down_latch(name).wait(0.05)
    with pytest.raises(ferrolock.WrongTypeError):
        client.fair_lock(name).acquire(timeout=0.05)
    with pytest.raises(ferrolock.WrongTypeError):
        client.read_write_lock(name).read_lock().acquire(timeout=0.05)
    with pytest.raises(ferrolock.WrongTypeError):
        client.read_write_lock(name).write_lock().acquire(timeout=0.05)


def test_bad_arguments(client: ferrolock.Client, name: str) -> None:
    sem = client.semaphore(name)
    ps = client.permit_expirable_semaphore(name + ":p")
    latch = client.count_down_latch(name)
    for bad_type in (True, 1.5, "1", None):
        with pytest.raises(TypeError, match="permits must be an int"):
            sem.acquire(permits=bad_type)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="count must be an int"):
        latch.try_set_count(False)
    for bad_seconds in (True, "1"):
        with pytest.raises(TypeError, match="timeout must be a number"):
            sem.acquire(timeout=bad_seconds)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="timeout must be a number"):
            ps.acquire(bad_seconds)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="lease must be a number"):
            ps.acquire(lease=bad_seconds)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="timeout must be a number"):
            latch.wait(bad_seconds)  # type: ignore[arg-type]
    with pytest.raises(ferrolock.InvalidArgumentError, match="permits = 0"):
        sem.acquire(permits=0)
    with pytest.raises(ferrolock.InvalidArgumentError, match="permits = 0"):
        sem.release(0)
    with pytest.raises(ferrolock.InvalidArgumentError, match="permits = -1"):
        sem.try_set_permits(-1)
    with pytest.raises(ferrolock.InvalidArgumentError, match="out of range"):
        sem.release(2**63)
    with pytest.raises(ferrolock.InvalidArgumentError, match="count = 0"):
        latch.try_set_count(0)
    with pytest.raises(ferrolock.InvalidArgumentError, match="non-blocking"):
        sem.acquire(False, 1.0)
    with pytest.raises(ferrolock.InvalidArgumentError, match="timeout"):
        sem.acquire(timeout=-5)
    with pytest.raises(ferrolock.InvalidArgumentError, match="lease"):
        ps.acquire(lease=0)
    with pytest.raises(ferrolock.InvalidArgumentError, match="timeout"):
        latch.wait(float("nan"))
    with pytest.raises(ferrolock.InvalidArgumentError, match="32 hex digits"):
        ps.release("not-an-id")
    with pytest.raises(TypeError, match="ferrolock.Permit or its id"):
        ps.release(42)  # type: ignore[arg-type]
    for make in (client.semaphore, client.permit_expirable_semaphore, client.count_down_latch, client.fair_lock):
        with pytest.raises(ferrolock.InvalidArgumentError, match="empty"):
            make("")
    with pytest.raises(ferrolock.InvalidArgumentError):
        client.read_write_lock("x" * 5000)


def test_closed_client(url: str, name: str) -> None:
    c = ferrolock.Client(url)
    sem, ps, latch = c.semaphore(name), c.permit_expirable_semaphore(name), c.count_down_latch(name)
    rw = c.read_write_lock(name)
    c.close()
    for call in (
        lambda: sem.acquire(),
        lambda: sem.release(),
        lambda: sem.available(),
        lambda: ps.acquire(),
        lambda: latch.count_down(),
        lambda: latch.wait(),
        lambda: rw.read_lock().acquire(),
        lambda: c.semaphore(name),
        lambda: c.permit_expirable_semaphore(name),
        lambda: c.count_down_latch(name),
        lambda: c.fair_lock(name),
        lambda: c.read_write_lock(name),
    ):
        with pytest.raises(ferrolock.ClientClosedError):
            call()


def test_closing_the_client_ends_waits(url: str, name: str) -> None:
    c = ferrolock.Client(url)
    c.semaphore(name).try_set_permits(0)
    c.count_down_latch(name + ":l").try_set_count(1)
    errors: list[BaseException] = []
    threads = [
        _thread(lambda: c.semaphore(name).acquire(), errors),
        _thread(lambda: c.count_down_latch(name + ":l").wait(), errors),
    ]
    wait_until(lambda: c.subscribed_channels() == 2, what="both to wait")
    c.close()
    for t in threads:
        t.join(timeout=30)
        assert not t.is_alive()
    assert len(errors) == 2 and all(isinstance(e, ferrolock.ClientClosedError) for e in errors)
