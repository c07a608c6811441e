"""The log bridge: the core's tracing events reach the logging logger "ferrolock"
(children by target), levels mapped; filtered by the level of "ferrolock" before
anything reaches Python; delivered by a thread of its own, so a thread that holds
what a logging handler needs never deadlocks with it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import pytest

import ferrolock
from conftest import WATCHDOG
from helpers import wait_until


class Collect(logging.Handler):
    def __init__(self, gate: threading.Lock | None = None) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.gate = gate

    def emit(self, record: logging.LogRecord) -> None:
        if self.gate is not None and hasattr(record, "ferrolock_target"):  # the bridge's records only
            with self.gate:
                pass
        self.records.append(record)

    def find(self, level: int, text: str) -> list[logging.LogRecord]:
        return [r for r in self.records if r.levelno == level and text in r.getMessage()]


@pytest.fixture
def collect() -> Iterator[Collect]:
    handler = Collect()
    logger = logging.getLogger("ferrolock")
    old = logger.level
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(old)


def test_loss_is_a_warning(url: str, client2: ferrolock.Client, name: str, collect: Collect) -> None:
    logging.getLogger("ferrolock").setLevel(logging.WARNING)
    with ferrolock.Client(url, watchdog_timeout=WATCHDOG) as client:
        lock = client.lock(name)
        lock.acquire()
        assert client2.lock(name).force_unlock()
        wait_until(lambda: bool(collect.find(logging.WARNING, name)), timeout=10, what="the loss warning")
    [record] = collect.find(logging.WARNING, name)
    assert record.name.startswith("ferrolock.") and "was lost" in record.getMessage()
    assert getattr(record, "ferrolock_target").startswith("ferrolock::")
    assert record.pathname.endswith(".rs") and record.lineno > 0  # where the core logged it


def test_debug_when_enabled(url: str, collect: Collect) -> None:
    logging.getLogger("ferrolock").setLevel(logging.DEBUG)
    with ferrolock.Client(url) as client:
        wait_until(lambda: bool(collect.find(logging.DEBUG, client.id)), what="the connect debug record")
    [record] = [r for r in collect.find(logging.DEBUG, client.id) if "client connected" in r.getMessage()]
    assert record.name == "ferrolock.client"
    assert "127.0.0.1" in record.getMessage()  # the server, never a password


def test_nothing_below_the_level_reaches_python(
    url: str, client2: ferrolock.Client, name: str, collect: Collect
) -> None:
    # The child logger would take DEBUG records: only the level of "ferrolock" decides
    # what the bridge forwards, before any record exists.
    logging.getLogger("ferrolock").setLevel(logging.WARNING)
    child = logging.getLogger("ferrolock.client")
    child.setLevel(logging.DEBUG)
    try:
        with ferrolock.Client(url, watchdog_timeout=WATCHDOG) as client:
            lock = client.lock(name)
            lock.acquire()
            assert client2.lock(name).force_unlock()
            # Records arrive in order: once the loss warning is there, a connect record would be too.
            wait_until(lambda: bool(collect.find(logging.WARNING, name)), timeout=10, what="the loss warning")
        assert collect.find(logging.DEBUG, client.id) == []
    finally:
        child.setLevel(logging.NOTSET)


def test_no_deadlock_with_a_blocked_handler(url: str, name: str) -> None:
    """A handler waits for something the calling thread holds while it calls into
    the core: the call completes (events queue), and the record arrives after."""
    gate = threading.Lock()
    handler = Collect(gate)
    logger = logging.getLogger("ferrolock")
    old = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    done = threading.Event()
    ids: list[str] = []

    def calls_into_the_core() -> None:
        with gate:
            with ferrolock.Client(url) as client:  # emits DEBUG records while connecting and closing
                ids.append(client.id)
                with client.lock(name):
                    pass
        done.set()

    try:
        worker = threading.Thread(target=calls_into_the_core, daemon=True)
        worker.start()
        assert done.wait(30), "deadlocked: a core call waited for the logging handler"
        wait_until(lambda: bool(handler.find(logging.DEBUG, ids[0])), what="the records after the gate opened")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
