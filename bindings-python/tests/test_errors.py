"""Every exception class, each from a real cause."""

from __future__ import annotations

import builtins
import math
from collections.abc import Iterator

import pytest
import redis

import ferrolock
import ferrolock.aio
from helpers import RedisServer, free_port


def test_hierarchy() -> None:
    for cls in (
        ferrolock.NotOwnedError,
        ferrolock.LockLostError,
        ferrolock.LockTimeoutError,
        ferrolock.ConnectionError,
        ferrolock.WrongTypeError,
        ferrolock.InvalidArgumentError,
    ):
        assert issubclass(cls, ferrolock.LockError)
    assert issubclass(ferrolock.NotOwnedError, RuntimeError)
    assert issubclass(ferrolock.LockTimeoutError, TimeoutError)
    assert issubclass(ferrolock.ConnectionError, builtins.ConnectionError)
    assert issubclass(ferrolock.InvalidArgumentError, ValueError)
    assert ferrolock.aio.LockError is ferrolock.LockError


def test_wrong_type(client: ferrolock.Client, r: redis.Redis, name: str) -> None:
    r.set(name, "not a lock")
    lock = client.lock(name)
    try:
        with pytest.raises(ferrolock.WrongTypeError) as info:
            lock.acquire(blocking=False)
        assert name in str(info.value)
        with pytest.raises(ferrolock.WrongTypeError):
            lock.locked()
        with pytest.raises(ferrolock.WrongTypeError):
            lock.remaining_lease()
    finally:
        r.delete(name)


@pytest.mark.parametrize("bad_name", ["", "x" * 4097])
def test_bad_names(client: ferrolock.Client, bad_name: str) -> None:
    with pytest.raises(ferrolock.InvalidArgumentError) as info:
        client.lock(bad_name)
    assert isinstance(info.value, ValueError)
    with pytest.raises(ferrolock.InvalidArgumentError):
        client.fenced_lock(bad_name)


@pytest.mark.parametrize(
    ("timeout", "lease"),
    [(-2.0, None), (math.nan, None), (math.inf, None), (8 * 86400.0, None), (1.0, 0.0), (1.0, -1.0), (1.0, math.nan)],
)
def test_bad_durations(client: ferrolock.Client, name: str, timeout: float, lease: float | None) -> None:
    lock = client.lock(name)
    with pytest.raises(ferrolock.InvalidArgumentError):
        lock.acquire(timeout=timeout, lease=lease)
    assert not lock.locked()


def test_bad_client_arguments(url: str) -> None:
    with pytest.raises(ferrolock.InvalidArgumentError):
        ferrolock.Client("http://127.0.0.1:1/")
    with pytest.raises(ferrolock.InvalidArgumentError):
        ferrolock.Client("redis://127.0.0.1:6379/0\0")
    with pytest.raises(ferrolock.InvalidArgumentError):
        ferrolock.Client(url, watchdog_timeout=-1.0)
    with pytest.raises(ferrolock.InvalidArgumentError):
        ferrolock.Client(url, watchdog_timeout=0.001)
    with pytest.raises(ferrolock.InvalidArgumentError):
        ferrolock.Client(url, connect_timeout=math.nan)


def test_unreachable_port() -> None:
    port = free_port()  # nobody listens there
    with pytest.raises(ferrolock.ConnectionError) as info:
        ferrolock.Client(f"redis://127.0.0.1:{port}/0", connect_timeout=1.0)
    assert isinstance(info.value, builtins.ConnectionError)
    assert str(port) in str(info.value)


@pytest.fixture(scope="module")
def secured() -> Iterator[RedisServer]:
    srv = RedisServer(password="s3cret-pw").start()
    yield srv
    srv.stop()


def test_wrong_password(secured: RedisServer) -> None:
    wrong = f"redis://:wrong-pw-123@127.0.0.1:{secured.port}/0"
    with pytest.raises(ferrolock.ConnectionError) as info:
        ferrolock.Client(wrong)
    assert "wrong-pw-123" not in str(info.value)
    # No password at all: refused at connect or at the first command (NOAUTH).
    with pytest.raises(ferrolock.ConnectionError):
        with ferrolock.Client(f"redis://127.0.0.1:{secured.port}/0") as anonymous:
            anonymous.lock("secured").acquire(blocking=False)
    with ferrolock.Client(secured.url) as client:  # the right one works
        lock = client.lock("secured")
        with lock:
            assert lock.owned()
        assert "s3cret-pw" not in repr(client)


def test_server_going_away_raises_connection_error() -> None:
    srv = RedisServer().start()
    try:
        client = ferrolock.Client(srv.url, response_timeout=0.5, connect_timeout=0.5)
        lock = client.lock("going-away")
        srv.stop()
        with pytest.raises(ferrolock.ConnectionError):
            lock.acquire(timeout=1.0)
        client.close()
    finally:
        srv.stop()


def test_not_owned_and_closed_client(url: str, name: str) -> None:
    client = ferrolock.Client(url)
    lock = client.lock(name)
    with pytest.raises(ferrolock.NotOwnedError) as info:
        lock.release()
    assert isinstance(info.value, RuntimeError)
    assert name in str(info.value)
    assert lock.acquire()
    client.close()  # releases what the client holds
    with pytest.raises(ferrolock.LockError):
        lock.acquire()
    with ferrolock.Client(url) as other:
        assert not other.lock(name).locked()
