"""Redis Sentinel and Redis Cluster (issue 13): the URL forms, the sentinel options,
and the replica acknowledgement (``replica_ack``) against a real Sentinel
deployment (one master, one replica, three sentinels started here)."""

from __future__ import annotations

import asyncio
import math
import os
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import redis

import ferrolock
import ferrolock.aio
from helpers import RedisServer, SentinelServer, wait_until

MASTER_NAME = "mymaster"
SECRET = "s3cret-pw-4711"  # must never show up in an error message or repr


# --- options: accepted and validated (no Sentinel needed) ---------------------------


def test_sentinel_options_are_accepted_outside_sentinel(url: str, name: str) -> None:
    """Outside Sentinel the options have no effect; they are accepted all the same."""
    with ferrolock.Client(
        url,
        sentinel_username="sentinel-user",
        sentinel_password=SECRET,
        replica_ack=True,
        replica_ack_timeout=0.25,
    ) as client:
        assert SECRET not in repr(client)
        with client.lock(name) as lock:
            assert lock.owned()
    with ferrolock.Client(url, replica_ack=False, replica_ack_timeout=600.0) as client:
        with client.lock(name) as lock:
            assert lock.owned()

    async def main() -> None:
        async with await ferrolock.aio.Client.connect(
            url, sentinel_username="u", sentinel_password=SECRET, replica_ack=False, replica_ack_timeout=0.001
        ) as aclient:
            assert SECRET not in repr(aclient)
            async with aclient.lock(name) as alock:
                assert await alock.owned()

    asyncio.run(main())


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("sentinel_username", 42),
        ("sentinel_password", b"bytes-pw"),
        ("replica_ack", 1),
        ("replica_ack", None),
        ("replica_ack_aof", "yes"),
        ("replica_ack_aof", 1),
        ("replica_ack_timeout", "1.0"),
        ("replica_ack_timeout", [1.0]),
    ],
)
def test_sentinel_options_bad_types(url: str, option: str, value: object) -> None:
    kwargs: dict[str, Any] = {option: value}
    # pyo3 names the argument in a note (PEP 678), which `match` searches too.
    with pytest.raises(TypeError, match=option):
        ferrolock.Client(url, **kwargs)

    async def connect() -> None:
        await ferrolock.aio.Client.connect(url, **kwargs)

    with pytest.raises(TypeError, match=option):
        asyncio.run(connect())


@pytest.mark.parametrize("policy", ["off", "one", "majority", "all", True, False])
def test_replica_ack_policies_are_accepted(url: str, name: str, policy: str | bool) -> None:
    """Every policy by name (and True/False for one/off); on one server none has an effect."""
    with ferrolock.Client(url, replica_ack=policy, replica_ack_aof=True) as client:
        with client.lock(name) as lock:
            assert lock.owned()


@pytest.mark.parametrize("policy", ["yes", "ONE", "", "quorum"])
def test_replica_ack_unknown_policy(url: str, policy: str) -> None:
    with pytest.raises(ferrolock.InvalidArgumentError, match="replica_ack") as info:
        ferrolock.Client(url, replica_ack=policy)
    assert isinstance(info.value, ValueError)

    async def connect() -> None:
        await ferrolock.aio.Client.connect(url, replica_ack=policy)

    with pytest.raises(ferrolock.InvalidArgumentError, match="off, one, majority or all"):
        asyncio.run(connect())


@pytest.mark.parametrize("timeout", [0.0, 0.0005, -1.0, 600.5, 8 * 86400.0, math.nan, math.inf, -math.inf])
def test_replica_ack_timeout_out_of_range(url: str, timeout: float) -> None:
    with pytest.raises(ferrolock.InvalidArgumentError) as info:
        ferrolock.Client(url, replica_ack_timeout=timeout)
    assert isinstance(info.value, ValueError)
    assert info.value.code == "ERR_INVALID_ARGUMENT"
    assert "replica_ack_timeout" in str(info.value)

    async def connect() -> None:
        await ferrolock.aio.Client.connect(url, replica_ack_timeout=timeout)

    with pytest.raises(ferrolock.InvalidArgumentError, match="replica_ack_timeout"):
        asyncio.run(connect())


@pytest.mark.parametrize("timeout", [0.001, 600.0])
def test_replica_ack_timeout_bounds_are_accepted(url: str, timeout: float) -> None:
    with ferrolock.Client(url, replica_ack_timeout=timeout) as client:
        assert client.held_count() == 0


@pytest.mark.parametrize(
    "bad_url",
    [
        f"redis+sentinel://:{SECRET}@127.0.0.1:26379",  # no master name
        f"redis+sentinel://:{SECRET}@127.0.0.1:26379/",
        f"redis+sentinel://user:{SECRET}@127.0.0.1:26379/mymaster/notadb",
        f"redis+sentinel://:{SECRET}@127.0.0.1:26379/mymaster/0/extra",
        f"redis+sentinel://:{SECRET}@127.0.0.1:1,,127.0.0.1:2/mymaster",
        f"rediss+sentinel://:{SECRET}@127.0.0.1:26379/mymaster?x=1",
        f"redis+cluster://:{SECRET}@127.0.0.1:7000/3",
        f"redis+cluster://:{SECRET}@127.0.0.1:7000,/",
        f"rediss+cluster://:{SECRET}@127.0.0.1:7000?timeout=1",
        f"redis+cluster://:{SECRET}@127.0.0.1:notaport",
        f"nonsense://:{SECRET}@127.0.0.1",
    ],
)
def test_malformed_topology_urls(bad_url: str) -> None:
    with pytest.raises(ferrolock.InvalidArgumentError) as info:
        ferrolock.Client(bad_url, sentinel_password=SECRET, connect_timeout=0.5)
    message = str(info.value)
    assert SECRET not in message and SECRET not in repr(info.value)
    assert "redis+sentinel://" in message and "redis+cluster://" in message  # says what is expected

    async def connect() -> None:
        await ferrolock.aio.Client.connect(bad_url, connect_timeout=0.5)

    with pytest.raises(ferrolock.InvalidArgumentError) as ainfo:
        asyncio.run(connect())
    assert SECRET not in str(ainfo.value)


def test_not_replicated_error_is_exported() -> None:
    cls = ferrolock.NotReplicatedError
    assert issubclass(cls, ferrolock.LockError)
    assert cls.code == "ERR_NOT_REPLICATED"
    assert cls("x").code == "ERR_NOT_REPLICATED"
    assert cls.__module__ == "ferrolock"
    assert "NotReplicatedError" in ferrolock.__all__ and "NotReplicatedError" in ferrolock.aio.__all__
    assert ferrolock.aio.NotReplicatedError is cls
    for other in (ferrolock.LockLostError, ferrolock.ConnectionError, ferrolock.InvalidArgumentError):
        assert not issubclass(cls, other)


# --- a real Sentinel deployment ------------------------------------------------------


@dataclass
class Deployment:
    master: RedisServer
    replica: RedisServer
    sentinels: list[SentinelServer]

    def url(self, count: int = 2) -> str:
        hosts = ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels[:count])
        return f"redis+sentinel://{hosts}/{MASTER_NAME}"


def _replication(server: RedisServer) -> dict[str, Any]:
    """INFO replication of ``server``, as redis-py parses it."""
    r = server.redis()
    try:
        return dict(r.info("replication"))
    finally:
        r.close()


def _sentinel_ready(sentinel: SentinelServer, master_port: int, replica_port: int) -> bool:
    r = sentinel.redis()
    command: Callable[..., Any] = r.execute_command  # untyped in redis-py
    try:
        addr = command("SENTINEL", "get-master-addr-by-name", MASTER_NAME)
        if not addr or int(addr[1]) != master_port:
            return False
        replicas = command("SENTINEL", "replicas", MASTER_NAME)
    except redis.exceptions.RedisError:  # not monitoring yet
        return False
    finally:
        r.close()
    for entry in replicas or []:
        # redis-py gives each replica as a dict; a flat [field, value, ...] list otherwise.
        pairs = entry.items() if isinstance(entry, dict) else zip(entry[::2], entry[1::2])
        fields = {_text(k): _text(v) for k, v in pairs}
        if fields.get("port") == str(replica_port) and "disconnected" not in fields.get("flags", "disconnected"):
            return True
    return False


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@pytest.fixture(scope="module")
def sentinel() -> Iterator[Deployment]:
    """One master, one replica of it, three sentinels; every process killed at the end."""
    servers: list[RedisServer] = []
    try:
        # The diskless sync delay is the master's setting (default 5 s before a full sync).
        master = RedisServer(extra_args=["--repl-diskless-sync-delay", "0"])
        servers.append(master)
        master.start()
        replica = RedisServer(
            extra_args=["--replicaof", "127.0.0.1", str(master.port), "--repl-diskless-sync-delay", "0"]
        )
        servers.append(replica)
        replica.start()
        wait_until(
            lambda: _replication(replica).get("master_link_status") == "up"
            and _replication(master).get("connected_slaves") == 1,
            timeout=10,
            what="the replica to sync with the master",
        )
        sentinels: list[SentinelServer] = []
        for _ in range(3):
            s = SentinelServer(MASTER_NAME, master.port)
            servers.append(s)
            s.start()
            sentinels.append(s)
        wait_until(
            lambda: all(_sentinel_ready(s, master.port, replica.port) for s in sentinels),
            timeout=10,
            what="every sentinel to know the master and the replica",
        )
        yield Deployment(master, replica, sentinels)
    finally:
        for srv in reversed(servers):
            srv.stop()  # SIGKILL: ends a SIGSTOPped process too


@pytest.fixture
def stopped_replica(sentinel: Deployment) -> Iterator[Deployment]:
    """The deployment with its replica frozen (SIGSTOP), thawed (SIGCONT) at the end:
    the master still counts it connected, but it acknowledges nothing."""
    os.kill(sentinel.replica.pid, signal.SIGSTOP)
    try:
        yield sentinel
    finally:
        os.kill(sentinel.replica.pid, signal.SIGCONT)
    # Back in sync before the next test: the replica acknowledges a write again.
    master = sentinel.master.redis()
    try:
        wait_until(
            lambda: master.wait(1, 100) >= 1,
            timeout=10,
            what="the thawed replica to acknowledge writes again",
        )
    finally:
        master.close()


def _lock_name() -> str:
    return f"sentinel:{uuid.uuid4().hex}"


def test_sentinel_url_acquires_and_releases(sentinel: Deployment) -> None:
    name = _lock_name()
    master = sentinel.master.redis()
    try:
        with ferrolock.Client(sentinel.url(), watchdog_timeout=1.5) as client:
            lock = client.lock(name)
            assert lock.acquire(timeout=5.0)
            try:
                assert lock.owned()
                assert master.exists(name) == 1  # on the master the sentinels name
            finally:
                lock.release()
            assert master.exists(name) == 0
            assert client.held_count() == 0
    finally:
        master.close()


def test_sentinel_url_with_aio(sentinel: Deployment) -> None:
    name = _lock_name()

    async def main() -> None:
        async with await ferrolock.aio.Client.connect(sentinel.url(3), replica_ack_timeout=2.0) as client:
            lock = client.lock(name)
            async with lock:
                assert await lock.owned()
            assert not await lock.locked()

    asyncio.run(main())


def test_wrong_sentinel_password_is_not_echoed(sentinel: Deployment) -> None:
    """The sentinels have no password: sending one fails, and the message does not show it."""
    with pytest.raises(ferrolock.LockError) as info:
        with ferrolock.Client(sentinel.url(), sentinel_password=SECRET, connect_timeout=1.0) as client:
            client.lock(_lock_name()).acquire(blocking=False)
    assert SECRET not in str(info.value)


def test_unacknowledged_acquire_raises_not_replicated(stopped_replica: Deployment) -> None:
    name = _lock_name()
    master = stopped_replica.master.redis()
    try:
        with ferrolock.Client(stopped_replica.url(), replica_ack_timeout=0.2) as client:
            lock = client.lock(name)
            started = time.monotonic()
            with pytest.raises(ferrolock.NotReplicatedError) as info:
                lock.acquire(timeout=5.0)
            assert time.monotonic() - started < 4.0
            assert info.value.code == "ERR_NOT_REPLICATED"
            assert name in str(info.value)
            assert 'replica_ack policy "one"' in str(info.value), str(info.value)
            assert not lock.owned()
            # The acquire is undone in the background: nothing stays locked.
            wait_until(lambda: master.exists(name) == 0, timeout=5, what="the undone acquire to leave no lock key")
            wait_until(lambda: client.held_count() == 0, what="the client to hold nothing")
            assert not lock.locked()
    finally:
        master.close()


def test_unacknowledged_acquire_with_aio(stopped_replica: Deployment) -> None:
    name = _lock_name()
    master = stopped_replica.master.redis()

    async def main() -> None:
        async with await ferrolock.aio.Client.connect(stopped_replica.url(), replica_ack_timeout=0.2) as client:
            lock = client.lock(name)
            with pytest.raises(ferrolock.NotReplicatedError):
                await lock.acquire(blocking=False)
            assert not await lock.owned()

    try:
        asyncio.run(main())
        wait_until(lambda: master.exists(name) == 0, timeout=5, what="the undone acquire to leave no lock key")
    finally:
        master.close()


@pytest.mark.parametrize("off", [False, "off"])
def test_replica_ack_off_acquires_without_a_replica(stopped_replica: Deployment, off: str | bool) -> None:
    name = _lock_name()
    master = stopped_replica.master.redis()
    try:
        with ferrolock.Client(stopped_replica.url(), replica_ack=off, replica_ack_timeout=0.2) as client:
            lock = client.lock(name)
            assert lock.acquire(timeout=5.0)
            try:
                assert lock.owned()
                assert master.exists(name) == 1
            finally:
                lock.release()
            assert master.exists(name) == 0
    finally:
        master.close()
