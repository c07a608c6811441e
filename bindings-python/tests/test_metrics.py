"""client.metrics() (a snapshot), client.metrics_text() (Prometheus), app_name=
(connection names), and a reconnect logged at INFO on "ferrolock"."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest
import redis

import ferrolock
import ferrolock.aio
from conftest import WATCHDOG
from helpers import wait_until


def test_metrics(client: ferrolock.Client, client2: ferrolock.Client, name: str) -> None:
    before = client.metrics()
    assert isinstance(before, ferrolock.Metrics) and before.client_id == client.id
    assert (before.acquired, before.not_acquired, before.holds_now, before.losses) == (0, 0, 0, 0)
    assert (before.failovers_noticed, before.failover_loss_report.count) == (0, 0)
    lock = client.lock(name)
    with lock:
        during = client.metrics()
        assert during.acquired == 1 and during.holds_now == 1
        assert not client2.lock(name).acquire(blocking=False)
        # A waiter of this client shows while it waits.
        waiter = client.lock(name)
        t = threading.Thread(target=lambda: waiter.acquire(timeout=0.5))
        t.start()
        wait_until(lambda: client.metrics().waiters_now == 1, what="the waiter to count")
        t.join(10)
    after = client.metrics()
    assert after.acquired == 1 and after.not_acquired == 1 and after.holds_now == 0 and after.waiters_now == 0
    assert after.wait.count == 2 and after.hold.count == 1
    for h in (after.wait, after.hold):
        assert len(h.counts) == len(h.bounds) + 1 and sum(h.counts) == h.count
        assert list(h.bounds) == sorted(h.bounds) and h.sum >= 0
    assert after.wait.quantile(1.0) >= 0.4  # the waiter waited 0.5 s
    # A loss counts.
    lost = client.lock(name)
    lost.acquire()
    assert client2.lock(name).force_unlock()
    assert lost.lost_event.wait(WATCHDOG * 3)
    wait_until(lambda: client.metrics().losses == 1, what="the loss to count")


def test_metrics_text(client: ferrolock.Client, name: str) -> None:
    with client.lock(name):
        pass
    text = client.metrics_text()
    assert f'client="{client.id}"' in text
    assert f'ferrolock_failovers_noticed_total{{client="{client.id}"}} 0' in text
    assert f'ferrolock_failover_loss_report_seconds_count{{client="{client.id}"}} 0' in text
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert lines and all(line.startswith("ferrolock_") for line in lines)


def test_asyncio_metrics(url: str, name: str) -> None:
    async def main() -> None:
        async with await ferrolock.aio.Client.connect(url, app_name="aio-test") as client:
            async with client.lock(name):
                assert client.metrics().holds_now == 1
            assert "ferrolock_" in client.metrics_text()

    asyncio.run(main())


def _connections(r: redis.Redis, prefix: str) -> list[dict[str, str]]:
    return [c for c in r.client_list() if c.get("name", "").startswith(prefix)]


def test_app_name(url: str, r: redis.Redis, name: str) -> None:
    with ferrolock.Client(url, app_name="billing-v2.1") as client:
        with client.lock(name):
            names = {c["name"] for c in _connections(r, f"ferrolock:{client.id}")}
        assert names == {f"ferrolock:{client.id}:billing-v2.1"}
    with ferrolock.Client(url) as plain:
        plain.lock(name).locked()
        assert {c["name"] for c in _connections(r, f"ferrolock:{plain.id}")} == {f"ferrolock:{plain.id}"}
    for bad in ("", "has space", "x" * 65):
        with pytest.raises(ferrolock.InvalidArgumentError):
            ferrolock.Client(url, app_name=bad)
    with pytest.raises(TypeError, match="app_name"):
        ferrolock.Client(url, app_name=5)  # type: ignore[arg-type]


def test_reconnect_is_logged_and_counted(url: str, r: redis.Redis, name: str) -> None:
    logger = logging.getLogger("ferrolock")
    old = logger.level
    logger.setLevel(logging.INFO)
    records: list[logging.LogRecord] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Collect(logging.INFO)
    logger.addHandler(handler)
    try:
        with ferrolock.Client(url) as client:
            lock = client.lock(name)
            assert not lock.locked()
            for c in _connections(r, f"ferrolock:{client.id}"):
                r.client_kill_filter(_id=c["id"])

            def probe() -> None:
                try:
                    lock.locked()
                except ferrolock.ConnectionError:
                    pass

            def reconnected() -> bool:
                # A command after the kill makes the connection again. A thread's first
                # call goes over the client's own connection (later ones over the
                # thread's: see test_thread_connection.py), so each probe is a new thread.
                t = threading.Thread(target=probe)
                t.start()
                t.join(10)
                return any(rec.levelno == logging.INFO and "again" in rec.getMessage() for rec in records)

            wait_until(reconnected, timeout=10, what="an INFO record of the reconnect")
            wait_until(lambda: client.metrics().reconnects >= 1, what="the reconnect to count")
        [record] = [rec for rec in records if rec.levelno == logging.INFO and "again" in rec.getMessage()][:1]
        assert record.name.startswith("ferrolock.")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
