"""Every exception class, each from a real cause."""

from __future__ import annotations

import asyncio
import builtins
import json
import math
import re
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

import ferrolock
import ferrolock.aio
from helpers import RedisServer, free_port, wait_until


def test_hierarchy() -> None:
    for cls in (
        ferrolock.NotOwnedError,
        ferrolock.LockLostError,
        ferrolock.LockTimeoutError,
        ferrolock.ConnectionError,
        ferrolock.WrongTypeError,
        ferrolock.InvalidArgumentError,
        ferrolock.PermissionDeniedError,
        ferrolock.NotReplicatedError,
        ferrolock.ClientClosedError,
    ):
        assert issubclass(cls, ferrolock.LockError)
        assert getattr(ferrolock.aio, cls.__name__) is cls
        assert cls.__name__ in ferrolock.__all__ and cls.__name__ in ferrolock.aio.__all__
    assert issubclass(ferrolock.NotOwnedError, RuntimeError)
    assert issubclass(ferrolock.LockTimeoutError, TimeoutError)
    assert issubclass(ferrolock.ConnectionError, builtins.ConnectionError)
    assert issubclass(ferrolock.InvalidArgumentError, ValueError)
    assert issubclass(ferrolock.PermissionDeniedError, PermissionError)
    assert ferrolock.aio.LockError is ferrolock.LockError


def test_codes() -> None:
    """Every class has the stable code of its kind (the Node binding's err.code)."""
    codes = {
        ferrolock.LockError: "ERR_INTERNAL",
        ferrolock.NotOwnedError: "ERR_NOT_OWNER",
        ferrolock.LockLostError: "ERR_LOCK_LOST",
        ferrolock.LockTimeoutError: "ERR_NOT_ACQUIRED",
        ferrolock.ConnectionError: "ERR_CONNECTION",
        ferrolock.WrongTypeError: "ERR_WRONG_TYPE",
        ferrolock.InvalidArgumentError: "ERR_INVALID_ARGUMENT",
        ferrolock.PermissionDeniedError: "ERR_PERMISSION",
        ferrolock.NotReplicatedError: "ERR_NOT_REPLICATED",
        ferrolock.ClientClosedError: "ERR_CLIENT_CLOSED",
    }
    for cls, code in codes.items():
        assert cls.code == code, cls
    assert len(set(codes.values())) == len(codes)


def test_codes_match_node_and_the_design_table() -> None:
    """docs/design.md §4: on each row, the Python classes named have the Node code of
    that row, and Node's error classes (bindings-node/lib/errors.js, read by node)
    have exactly the codes the table names."""
    root = Path(__file__).resolve().parents[2]
    design = (root / "docs" / "design.md").read_text()
    table = design.split("## 4. Errors", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:-1] for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]
    python_classes = {n: getattr(ferrolock, n) for n in ferrolock.__all__ if n.endswith("Error")}
    seen: dict[str, str] = {}
    for cells in rows:
        python_cell, node_cell = cells[2], cells[3]
        codes = re.findall(r"ERR_[A-Z_]+", node_cell)
        assert len(set(codes)) == 1, f"one Node code per row: {cells}"
        for name in re.findall(r"\b([A-Z][A-Za-z]+Error)\b", python_cell):
            if name in python_classes:
                seen[name] = codes[0]
                assert python_classes[name].code == codes[0], (name, codes[0])
    assert set(seen) == set(python_classes), f"classes the table does not name: {set(python_classes) - set(seen)}"
    out = subprocess.run(
        ["node", "-e", "const {errors} = require(process.argv[1]); "
         "console.log(JSON.stringify(Object.values(errors).map((c) => c.code).filter(Boolean)))",
         str(root / "bindings-node" / "lib" / "errors.js")],
        check=True, capture_output=True, text=True,
    )
    node_codes = set(json.loads(out.stdout))
    table_codes = {c for cells in rows for c in re.findall(r"ERR_[A-Z_]+", cells[3])}
    assert table_codes == node_codes, (table_codes ^ node_codes)
    assert {cls.code for cls in python_classes.values()} <= node_codes


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


def test_unknown_lock_kind(client: ferrolock.Client, name: str) -> None:
    with pytest.raises(ferrolock.InvalidArgumentError, match="unknown lock kind"):
        ferrolock.Lock(client, name, kind="semaphore")


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
    assert info.value.code == "ERR_NOT_OWNER"
    assert lock.acquire()
    client.close()  # releases what the client holds
    with pytest.raises(ferrolock.ClientClosedError) as closed:
        lock.acquire()
    assert closed.value.code == "ERR_CLIENT_CLOSED"
    with ferrolock.Client(url) as other:
        assert not other.lock(name).locked()


@pytest.mark.parametrize("factor", [-0.01, 0.51, math.nan, math.inf])
def test_drift_factor_out_of_range(url: str, factor: float) -> None:
    with pytest.raises(ferrolock.InvalidArgumentError) as info:
        ferrolock.Client(url, drift_factor=factor)
    assert isinstance(info.value, ValueError)
    assert "drift_factor" in str(info.value)

    async def connect() -> None:
        await ferrolock.aio.Client.connect(url, drift_factor=factor)

    with pytest.raises(ferrolock.InvalidArgumentError):
        asyncio.run(connect())


@pytest.mark.parametrize("factor", [0.0, 0.01, 0.5])
def test_drift_factor_in_range(url: str, name: str, factor: float) -> None:
    with ferrolock.Client(url, drift_factor=factor) as client:
        lock = client.lock(name)
        with lock:
            assert lock.owned()

    async def main() -> None:
        async with await ferrolock.aio.Client.connect(url, drift_factor=factor) as aclient:
            async with aclient.lock(name) as alock:
                assert await alock.owned()

    asyncio.run(main())


def test_drift_factor_reports_a_loss_before_redis_expires_the_lock(url: str, r: redis.Redis, name: str) -> None:
    """With drift_factor 0.5, a 4 s lease counts as lost 2.002 s in, while Redis
    still keeps the lock for about 2 s more."""
    left: list[float | None] = []
    lost = threading.Event()

    def on_lost(lock: ferrolock.Lock) -> None:
        left.append(lock.remaining_lease())
        lost.set()

    with ferrolock.Client(url, drift_factor=0.5) as client:
        lock = client.lock(name, on_lost=on_lost)
        assert lock.acquire(lease=4.0)
        assert lost.wait(10)
        assert lock.lost
        with pytest.raises(ferrolock.LockLostError):
            lock.release()
    remaining = left[0]
    assert remaining is not None and remaining > 1.0, remaining
    wait_until(lambda: r.exists(name) == 0, timeout=10, what="Redis to expire the lock")


# ACL users: a refused command is PermissionDeniedError naming the rule that would
# allow it, whether Redis refuses it inside the lock script (HINCRBY) or outright
# (EVALSHA), and nothing stays locked.


@pytest.fixture(scope="module")
def acl_server() -> Iterator[RedisServer]:
    srv = RedisServer().start()
    yield srv
    srv.stop()


@pytest.mark.parametrize("api", ["sync", "asyncio"])
@pytest.mark.parametrize("command", ["hincrby", "evalsha"])
def test_permission_denied(acl_server: RedisServer, name: str, command: str, api: str) -> None:
    user = f"no-{command}-{api}"
    admin = acl_server.redis()
    admin.acl_setuser(
        user, enabled=True, reset=True, passwords=["+pw"], keys=["*"], channels=["*"], commands=["+@all", f"-{command}"]
    )
    url = f"redis://{user}:pw@127.0.0.1:{acl_server.port}/0"
    error: BaseException
    try:
        if api == "sync":
            with ferrolock.Client(url) as client:
                lock = client.lock(name)
                with pytest.raises(ferrolock.LockError) as info:
                    lock.acquire(blocking=False)
                error = info.value
                assert client.held_count() == 0
                with pytest.raises(ferrolock.PermissionDeniedError):
                    with lock.hold(timeout=1.0):
                        pass
        else:

            async def main() -> BaseException:
                async with await ferrolock.aio.Client.connect(url) as aclient:
                    with pytest.raises(ferrolock.aio.LockError) as info:
                        await aclient.lock(name).acquire()
                    assert aclient.held_count() == 0
                    return info.value

            error = asyncio.run(main())
        assert admin.exists(name) == 0, "a refused acquire left the lock behind"
    finally:
        admin.close()
    assert isinstance(error, ferrolock.PermissionDeniedError), repr(error)
    assert isinstance(error, PermissionError)
    assert isinstance(error, ferrolock.LockError)
    assert f"+{command}" in str(error), str(error)
    assert f'"{name}"' in str(error), str(error)
