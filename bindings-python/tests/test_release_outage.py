"""A release whose reply is lost while Redis then stays unreachable longer than the
retry window (the unlock latch's TTL), through tests/harness's fault-proxy: the
release returns (it took effect), no loss is reported, and nothing is left in Redis
that no live hold accounts for once Redis answers again, also when the release
handed the lock to a waiter of the same client."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest
import redis

import ferrolock
from helpers import FaultProxy, RedisServer, wait_until

OUTAGE = 2.5  # seconds: longer than the retry window (1 s) and a reconnect




@pytest.fixture
def outage_client(proxy: FaultProxy) -> Iterator[ferrolock.Client]:
    """Timeouts of 500 ms, a retry window of 1 s, a 10 s watchdog lease."""
    c = ferrolock.Client(proxy.url, watchdog_timeout=10, response_timeout=0.5, connect_timeout=0.5, retry_window=1.0)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def other(url: str) -> Iterator[ferrolock.Client]:
    c = ferrolock.Client(url, watchdog_timeout=10)
    try:
        yield c
    finally:
        c.close()


def fields_of(r: redis.Redis, name: str) -> dict[str, int]:
    """The lock hash: owner field -> hold count."""
    raw: dict[bytes, bytes] = r.hgetall(name)  # type: ignore[assignment]
    return {k.decode(): int(v) for k, v in raw.items()}


class Outage:
    """Holds all traffic for OUTAGE seconds once ``ran`` says the release script has
    run on the server (its reply held back meanwhile), on a thread of its own while
    the test's thread releases."""

    def __init__(self, proxy: FaultProxy, ran: Callable[[], bool]) -> None:
        self.dark = 0.0
        self.healed = 0.0
        self._proxy = proxy
        self._ran = ran
        proxy.send("delay-next-reply-to redisson_unlock_latch 60000")
        self._thread = threading.Thread(target=self._run)
        self._thread.start()

    def _run(self) -> None:
        try:
            wait_until(self._ran, what="the release ran on the server")
            self._proxy.send("blackhole on")
            self.dark = time.monotonic()
            # The fault itself lasts OUTAGE: this waits out the fault, not a state.
            time.sleep(OUTAGE)
        finally:
            self._proxy.send("blackhole off")
            self.healed = time.monotonic()

    def wait_healed(self) -> float:
        self._thread.join(30)
        assert self.healed, "the outage ended"
        return self.healed


def test_a_release_whose_reply_is_lost_in_a_long_outage_returns_and_reports_no_loss(
    proxy: FaultProxy, outage_client: ferrolock.Client, other: ferrolock.Client, r: redis.Redis, name: str
) -> None:
    lost: list[object] = []
    lock = outage_client.lock(name, on_lost=lambda *args: lost.append(args))
    assert lock.acquire()
    outage = Outage(proxy, lambda: not r.exists(name))
    try:
        lock.release()
        released: BaseException | None = None
    except ferrolock.LockError as e:
        released = e
    answered = time.monotonic()
    healed = outage.wait_healed()
    # Truthful: Redis ran the release, so the caller is told neither that it still
    # holds the level nor that it lost it.
    assert released is None, f"release raised {released!r}"
    assert answered < healed, "the release answered during the outage"
    # Once Redis answers nothing is left, and another client gets the lock at once.
    taken = other.lock(name)
    assert taken.acquire(timeout=max(0.0, healed + 2.5 - time.monotonic())), "another client acquires within 2.5 s of the heal"
    taken.release()
    # Releasing again (the old advice) says it is not held, not that it was lost.
    with pytest.raises(ferrolock.NotOwnedError):
        lock.release()
    assert not lock.lost
    assert outage_client.metrics().losses == 0
    assert lost == [], "no on_lost call"
    assert outage_client.held_count() == 0


def test_a_hand_off_whose_reply_is_lost_in_a_long_outage_leaves_no_orphan(
    proxy: FaultProxy, outage_client: ferrolock.Client, other: ferrolock.Client, r: redis.Redis, name: str
) -> None:
    b_lost: list[object] = []
    a, b = outage_client.lock(name), outage_client.lock(name, on_lost=lambda *args: b_lost.append(args))
    assert a.acquire()
    (a_owner,) = fields_of(r, name)
    handed = threading.Event()
    healed_at: list[float] = []
    heal = threading.Event()
    b_outcome: dict[str, object] = {}

    def fields() -> dict[str, int]:
        return fields_of(r, name)

    def accounted() -> bool:
        # b's own view (this is b's thread): a hold it keeps has its field, one it
        # was told it lost has none; a gave its hold up.
        now = fields()
        b_outcome["seen"] = (now, b.lost)
        return (len(now) == 1 and a_owner not in now) if not b.lost else now == {}

    def successor() -> None:
        # b's holder is this thread: it acquires, checks and releases.
        try:
            b_outcome["acquired"] = b.acquire()
            handed.set()
            heal.wait(30)
            healed = healed_at[0]
            wait_until(accounted, timeout=max(0.0, healed + 2.0 - time.monotonic()), what="nothing in Redis that no live hold accounts for")
            if not b.lost:
                b.release()
                b_outcome["released"] = True
        except BaseException as e:  # reported by the test's thread
            b_outcome["error"] = e

    thread = threading.Thread(target=successor)
    thread.start()
    wait_until(lambda: outage_client.metrics().waiters_now == 1, what="b waits for the lock")

    def handed_to_b() -> bool:
        owners = list(fields())
        return len(owners) == 1 and owners[0] != a_owner

    outage = Outage(proxy, handed_to_b)
    try:
        a.release()
        released: BaseException | None = None
    except ferrolock.LockError as e:
        released = e
    answered_at = time.monotonic()
    healed_at.append(outage.wait_healed())
    heal.set()
    thread.join(30)
    assert "error" not in b_outcome, f"{b_outcome['error']!r}; fields and b lost: {b_outcome.get('seen')}"
    assert handed.is_set() and b_outcome["acquired"] is True
    assert released is None, f"release raised {released!r}"
    healed = healed_at[0]
    assert answered_at < healed, "the release answered during the outage"
    taken = other.lock(name)
    assert taken.acquire(timeout=max(0.0, healed + 2.5 - time.monotonic())), "another client acquires within 2.5 s of the heal"
    taken.release()
    assert not a.lost
    # b either kept the hold (and released it) or was told it lost it, with its field gone (above).
    assert (b_outcome.get("released") is True) != bool(b_lost), (b_outcome, b_lost)
    assert outage_client.held_count() == 0
