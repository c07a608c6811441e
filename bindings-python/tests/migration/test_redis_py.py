"""docs/site/migration/redis-py.md, row by row: redis-py's ``Lock`` (the version pinned
in requirements-dev.txt) and ferrolock's mapped call on the same scenario."""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import Any

import pytest
import redis
import redis.asyncio
from redis.exceptions import LockError, LockNotOwnedError

import ferrolock
import ferrolock.aio
from helpers import wait_until

row = pytest.mark.row


def command_calls(r: redis.Redis, command: str) -> int:
    stats = r.info("commandstats").get(f"cmdstat_{command}", {})
    return int(stats.get("calls", 0))


@row("redis-py/client")
def test_client_close(r: redis.Redis, url: str, name: str) -> None:
    # redis-py: closing the client leaves its lock held (no expiry without timeout).
    theirs = redis.Redis.from_url(url)
    assert theirs.lock(f"{name}:rp").acquire(blocking=False)
    theirs.close()
    assert r.exists(f"{name}:rp") and r.pttl(f"{name}:rp") == -1
    r.delete(f"{name}:rp")
    # ferrolock: close (or leaving `with`) releases what the client still holds.
    with ferrolock.Client(url) as ours:
        assert ours.lock(name).acquire(blocking=False)
    assert not r.exists(name)


@row("redis-py/reentrant")
def test_reentrancy(client: ferrolock.Client, r: redis.Redis, name: str) -> None:
    theirs = r.lock(f"{name}:rp")
    assert theirs.acquire(blocking=False)
    assert not theirs.acquire(blocking=False), "redis-py's lock is not re-entrant"
    theirs.release()
    ours = client.lock(name)
    assert ours.acquire(blocking=False) and ours.acquire(blocking=False)
    assert ours.hold_count() == 2
    ours.release()
    ours.release()


@row("redis-py/timeout", "redis-py/no-timeout")
def test_lease(client: ferrolock.Client, r: redis.Redis, name: str) -> None:
    theirs = r.lock(f"{name}:rp", timeout=10)
    ours = client.lock(name)
    assert theirs.acquire() and ours.acquire(lease=10.0)
    assert 9000 < r.pttl(f"{name}:rp") <= 10000
    assert 9000 < r.pttl(name) <= 10000
    theirs.release()
    ours.release()
    # Without a timeout redis-py's key never expires; ferrolock's has the watchdog lease.
    theirs = r.lock(f"{name}:rp")
    assert theirs.acquire() and ours.acquire()
    assert r.pttl(f"{name}:rp") == -1
    assert 0 < r.pttl(name) <= client.watchdog_timeout * 1000
    theirs.release()
    ours.release()


@row("redis-py/blocking-timeout")
def test_blocking_timeout(client: ferrolock.Client, client2: ferrolock.Client, r: redis.Redis, name: str) -> None:
    held_theirs = r.lock(f"{name}:rp")
    assert held_theirs.acquire()
    assert r.lock(f"{name}:rp", blocking_timeout=0.2).acquire() is False
    assert r.lock(f"{name}:rp").acquire(blocking_timeout=0.2) is False
    held_theirs.release()
    held_ours = client2.lock(name)
    assert held_ours.acquire()
    assert client.lock(name).acquire(timeout=0.2) is False
    held_ours.release()


@row("redis-py/with-timeout", "redis-py/errors")
def test_with_not_acquired(client: ferrolock.Client, client2: ferrolock.Client, r: redis.Redis, name: str) -> None:
    held_theirs = r.lock(f"{name}:rp")
    assert held_theirs.acquire()
    with pytest.raises(LockError):
        with r.lock(f"{name}:rp", blocking_timeout=0.2):
            pass
    held_theirs.release()
    held_ours = client2.lock(name)
    assert held_ours.acquire()
    with pytest.raises(ferrolock.LockTimeoutError) as info:
        with client.lock(name).hold(timeout=0.2):
            pass
    assert isinstance(info.value, TimeoutError) and isinstance(info.value, ferrolock.LockError)
    held_ours.release()


@row("redis-py/ctor-blocking")
def test_constructor_blocking_false(
    client: ferrolock.Client, client2: ferrolock.Client, r: redis.Redis, name: str
) -> None:
    held_theirs = r.lock(f"{name}:rp")
    assert held_theirs.acquire()
    theirs = r.lock(f"{name}:rp", blocking=False)
    assert theirs.acquire() is False
    with pytest.raises(LockError):  # the object's blocking=False reaches `with`
        with theirs:
            pass
    held_theirs.release()
    held_ours = client2.lock(name)
    assert held_ours.acquire()
    ours = client.lock(name)
    assert ours.acquire(blocking=False) is False
    with pytest.raises(ferrolock.LockTimeoutError):
        with ours.hold(timeout=0):
            pass
    held_ours.release()


@row("redis-py/sleep")
def test_no_polling(client: ferrolock.Client, url: str, r: redis.Redis, name: str) -> None:
    """While both wait on a held lock, redis-py's waiter sends a SET every `sleep`;
    ferrolock's sends nothing until the release message wakes it."""
    held_theirs = r.lock(f"{name}:rp")
    # A holder that sends nothing while it holds (no renewal, no note), so that every
    # script call counted below would be the waiter's.
    quiet = ferrolock.Client(url, holder_notes="off")
    held_ours = quiet.lock(name)
    assert held_theirs.acquire() and held_ours.acquire(lease=30.0)
    results: dict[str, bool] = {}

    def wait_theirs() -> None:
        results["theirs"] = r.lock(f"{name}:rp", sleep=0.01).acquire(blocking_timeout=30)

    def wait_ours() -> None:
        lock = client.lock(name)
        results["ours"] = lock.acquire(timeout=30.0)
        lock.release()

    ours_thread = threading.Thread(target=wait_ours)
    ours_thread.start()
    wait_until(lambda: client.metrics().waiters_now == 1, what="ferrolock's waiter parked")
    scripts = command_calls(r, "evalsha")
    sets = command_calls(r, "set")
    theirs_thread = threading.Thread(target=wait_theirs)
    theirs_thread.start()
    wait_until(lambda: command_calls(r, "set") >= sets + 20, what="redis-py's waiter polling 20 times")
    assert command_calls(r, "evalsha") == scripts, "ferrolock's parked waiter sent nothing"
    held_theirs.release()
    held_ours.release()
    theirs_thread.join(30)
    ours_thread.join(30)
    assert results == {"theirs": True, "ours": True}
    r.delete(f"{name}:rp")
    quiet.close()


@row("redis-py/thread-local")
def test_other_thread_releases(client: ferrolock.Client, r: redis.Redis, name: str) -> None:
    def in_thread(fn: object) -> BaseException | None:
        failed: list[BaseException] = []

        def run() -> None:
            try:
                fn()  # type: ignore[operator]
            except BaseException as e:
                failed.append(e)

        t = threading.Thread(target=run)
        t.start()
        t.join(10)
        return failed[0] if failed else None

    # Default: only the acquiring thread may release, in both. redis-py's other thread
    # has no token at all: an AttributeError, not a LockError.
    theirs = r.lock(f"{name}:rp")
    ours = client.lock(name)
    assert theirs.acquire() and ours.acquire()
    assert isinstance(in_thread(theirs.release), AttributeError)
    assert isinstance(in_thread(ours.release), ferrolock.NotOwnedError)
    theirs.release()
    ours.release()
    # thread_local=False / holder_id: any thread using the object is the holder.
    theirs = r.lock(f"{name}:rp", thread_local=False)
    shared = client.lock(name, holder_id=1)
    assert theirs.acquire() and shared.acquire()
    assert in_thread(theirs.release) is None
    assert in_thread(shared.release) is None
    assert not r.exists(f"{name}:rp") and not shared.locked()


@row("redis-py/acquire-args")
def test_acquire_arguments(client: ferrolock.Client, client2: ferrolock.Client, r: redis.Redis, name: str) -> None:
    # By keyword both say the same; by position redis-py's first is `sleep`.
    assert list(inspect.signature(redis.lock.Lock.acquire).parameters)[1:4] == ["sleep", "blocking", "blocking_timeout"]
    assert list(inspect.signature(ferrolock.Lock.acquire).parameters)[1:3] == ["blocking", "timeout"]
    held_theirs = r.lock(f"{name}:rp")
    held_ours = client2.lock(name)
    assert held_theirs.acquire() and held_ours.acquire()
    assert r.lock(f"{name}:rp").acquire(blocking=True, blocking_timeout=0.1) is False
    assert client.lock(name).acquire(True, 0.1) is False
    assert client.lock(name).acquire(timeout=0.1) is False
    held_theirs.release()
    held_ours.release()


@row("redis-py/token")
def test_token_hand_over(client: ferrolock.Client, client2: ferrolock.Client, r: redis.Redis, url: str, name: str) -> None:
    # redis-py: another process that knows the token can release the lock.
    assert r.lock(f"{name}:rp").acquire(token="job-7")
    other = redis.Redis.from_url(url)
    handed = other.lock(f"{name}:rp")
    handed.local.token = b"job-7"
    handed.release()
    other.close()
    assert not r.exists(f"{name}:rp")
    # ferrolock: the owner field is <client id>:<holder id>; the same holder id on
    # another client is another holder, so a hand-over stays inside one client.
    ours = client.lock(name, holder_id=7)
    assert ours.acquire()
    (holder,) = ours.status().holders
    assert holder.owner == f"{client.id}:7"
    with pytest.raises(ferrolock.NotOwnedError):
        client2.lock(name, holder_id=7).release()
    client.lock(name, holder_id=7).release()  # another object, same client and id: the same holder
    assert not ours.locked()


@row("redis-py/release", "redis-py/errors")
def test_release_errors(client: ferrolock.Client, client2: ferrolock.Client, r: redis.Redis, name: str) -> None:
    with pytest.raises(LockError):
        r.lock(f"{name}:rp").release()
    with pytest.raises(ferrolock.NotOwnedError) as info:
        client.lock(name).release()
    assert isinstance(info.value, RuntimeError)
    # The lock was taken away meanwhile.
    theirs = r.lock(f"{name}:rp")
    assert theirs.acquire()
    r.delete(f"{name}:rp")
    with pytest.raises(LockNotOwnedError):
        theirs.release()
    ours = client.lock(name)
    assert ours.acquire()
    assert client2.lock(name).force_unlock()
    wait_until(lambda: ours.lost, what="the hold reported lost")
    with pytest.raises(ferrolock.LockLostError):
        ours.release()


@row("redis-py/raise-on-release-error")
def test_raise_on_release_error(client: ferrolock.Client, client2: ferrolock.Client, r: redis.Redis, name: str) -> None:
    with r.lock(f"{name}:rp", raise_on_release_error=False):
        r.delete(f"{name}:rp")  # no error leaves the `with`
    ours = client.lock(name)
    with pytest.raises(ferrolock.LockLostError):
        with ours:
            assert client2.lock(name).force_unlock()
            wait_until(lambda: ours.lost, what="the hold reported lost")


@row("redis-py/with")
def test_with_waits(client: ferrolock.Client, client2: ferrolock.Client, r: redis.Redis, name: str) -> None:
    """`with lock:` waits for the holder in both (redis-py: up to the object's
    blocking_timeout, None by default)."""
    pairs = [(r.lock(f"{name}:rp"), r.lock(f"{name}:rp")), (client2.lock(name), client.lock(name))]
    for holder, waiter in pairs:
        entered = threading.Event()
        assert holder.acquire()

        def enter(lock: Any = waiter) -> None:
            with lock:
                entered.set()

        sets = command_calls(r, "set")
        t = threading.Thread(target=enter)
        t.start()
        if waiter is pairs[1][1]:
            wait_until(lambda: client.metrics().waiters_now == 1, what="ferrolock's `with` waiting")
        else:
            wait_until(lambda: command_calls(r, "set") >= sets + 2, what="redis-py's `with` retrying")
        assert not entered.is_set(), "entered while held"
        holder.release()
        assert entered.wait(10)
        t.join(10)
    assert not r.exists(f"{name}:rp") and not r.exists(name)


@row("redis-py/extend", "redis-py/extend-replace", "redis-py/reacquire")
def test_extend(client: ferrolock.Client, r: redis.Redis, name: str) -> None:
    theirs = r.lock(f"{name}:rp", timeout=10)
    ours = client.lock(name)
    assert theirs.acquire() and ours.acquire(lease=10.0)
    theirs.extend(5)
    ours.extend(5.0)
    assert 14000 < r.pttl(f"{name}:rp") <= 15000 and 14000 < r.pttl(name) <= 15000
    theirs.extend(5, replace_ttl=True)
    ours.extend(5.0, replace=True)
    assert 4000 < r.pttl(f"{name}:rp") <= 5000 and 4000 < r.pttl(name) <= 5000
    theirs.reacquire()
    assert ours.reacquire() == 10.0
    assert 9000 < r.pttl(f"{name}:rp") <= 10000 and 9000 < r.pttl(name) <= 10000
    theirs.release()
    ours.release()
    # Only an explicit lease can be extended.
    theirs = r.lock(f"{name}:rp")
    assert theirs.acquire() and ours.acquire()
    with pytest.raises(LockError):
        theirs.extend(5)
    with pytest.raises(ferrolock.InvalidArgumentError):
        ours.extend(5.0)
    theirs.release()
    ours.release()


@row("redis-py/locked", "redis-py/owned")
def test_locked_owned(client: ferrolock.Client, client2: ferrolock.Client, r: redis.Redis, name: str) -> None:
    holder_theirs, other_theirs = r.lock(f"{name}:rp"), r.lock(f"{name}:rp")
    holder_ours, other_ours = client.lock(name), client2.lock(name)
    assert not holder_theirs.locked() and not holder_ours.locked()
    assert holder_theirs.acquire() and holder_ours.acquire()
    assert other_theirs.locked() and other_ours.locked()
    assert holder_theirs.owned() and holder_ours.owned()
    assert not other_theirs.owned() and not other_ours.owned()
    holder_theirs.release()
    holder_ours.release()


@row("redis-py/pttl")
def test_remaining_lease(client: ferrolock.Client, r: redis.Redis, name: str) -> None:
    ours = client.lock(name)
    assert r.pttl(f"{name}:rp") == -2 and ours.remaining_lease() is None  # free
    assert ours.acquire(lease=10.0)
    assert 9000 < r.pttl(name) <= 10000 and 9.0 < (ours.remaining_lease() or 0) <= 10.0  # ms vs seconds
    ours.release()
    r.set(name, "x")
    r.delete(name)


@row("redis-py/asyncio")
def test_asyncio(url: str, r: redis.Redis, name: str) -> None:
    async def main() -> None:
        theirs_client = redis.asyncio.Redis.from_url(url)
        # redis-py's asyncio lock keeps its token per thread: another task of the
        # same thread may release it.
        theirs = theirs_client.lock(f"{name}:rp")
        assert await theirs.acquire()
        await asyncio.create_task(theirs.release())
        assert not await theirs_client.exists(f"{name}:rp")
        await theirs_client.aclose()
        # ferrolock.aio: the holder is (lock object, task); a cancelled wait leaves nothing.
        async with await ferrolock.aio.Client.connect(url) as client:
            ours = client.lock(name)
            assert await ours.acquire()
            with pytest.raises(ferrolock.NotOwnedError):
                await asyncio.create_task(ours.release())
            waiter = asyncio.create_task(client.lock(name).acquire())
            while client.metrics().waiters_now != 1:
                await asyncio.sleep(0.005)
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
            await ours.release()
            assert not await ours.locked()

    asyncio.run(main())


@row("redis-py/keys")
def test_same_name(client: ferrolock.Client, r: redis.Redis, name: str) -> None:
    # A redis-py lock at `name` is a string: ferrolock refuses it (wrong type).
    theirs = r.lock(name)
    assert theirs.acquire()
    with pytest.raises(ferrolock.WrongTypeError):
        client.lock(name).acquire(blocking=False)
    theirs.release()
    # A ferrolock lock at `name` is a hash: redis-py's SET NX finds a key and waits
    # as if the lock were held by one of its own.
    ours = client.lock(name)
    assert ours.acquire()
    assert r.lock(name).acquire(blocking=False) is False
    assert r.lock(name, blocking_timeout=0.1).acquire() is False
    ours.release()
    assert r.lock(name).acquire(blocking=False)
    r.delete(name)
