"""Fixtures: one redis-server for the suite (plus dedicated ones where a test needs
to break or configure its server), ferrolock clients checked for leaks."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis

import ferrolock
from helpers import FaultProxy, RedisServer, wait_until

WATCHDOG = 1.5  # seconds: short, so that lost-lock tests run in seconds


@pytest.fixture(scope="session")
def server() -> Iterator[RedisServer]:
    """The suite's redis-server. At the end: no lock left, no subscription left."""
    srv = RedisServer().start()
    try:
        yield srv
        r = srv.redis()

        def only_counters_left() -> bool:
            # Fencing-token counters outlive their locks by design (Redisson does the
            # same); unlock latches expire within the retry window.
            keys = [k.decode() for k in r.scan_iter(count=1000)]
            return all(k.startswith("redisson_lock_token:") for k in keys)

        wait_until(only_counters_left, timeout=15, what="no lock or latch keys left on the server")
        channels = r.pubsub_channels()
        assert channels == [], f"subscriptions left behind: {channels}"
        r.close()
    finally:
        srv.stop()


@pytest.fixture
def url(server: RedisServer) -> str:
    return server.url


@pytest.fixture
def r(server: RedisServer) -> Iterator[redis.Redis]:
    client = server.redis()
    yield client
    client.close()


@pytest.fixture
def name() -> str:
    """A lock name no other test uses."""
    return f"test:{uuid.uuid4().hex}"


def check_client_clean(client: ferrolock.Client) -> None:
    wait_until(lambda: client.subscribed_channels() == 0, what="the client to leave every channel")
    assert client.held_count() == 0, "a test left a lock held"


def _checked_client(url: str) -> Iterator[ferrolock.Client]:
    """A ferrolock client with a short watchdog; at the end it must hold nothing and
    be subscribed to nothing."""
    c = ferrolock.Client(url, watchdog_timeout=WATCHDOG)
    try:
        yield c
        check_client_clean(c)
    finally:
        c.close()


@pytest.fixture
def client(url: str) -> Iterator[ferrolock.Client]:
    """A ferrolock client, checked clean at the end."""
    yield from _checked_client(url)


@pytest.fixture
def client2(url: str) -> Iterator[ferrolock.Client]:
    """A second, independent client (another process, as far as Redis can tell)."""
    yield from _checked_client(url)


@pytest.fixture
def proxy(server: RedisServer) -> Iterator[FaultProxy]:
    """tests/harness's fault proxy in front of this test's server."""
    p = FaultProxy(server.port)
    try:
        yield p
    finally:
        p.stop()
