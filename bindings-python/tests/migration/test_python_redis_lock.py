"""docs/site/migration/python-redis-lock.md, row by row: python-redis-lock's ``Lock``
(the version pinned in requirements-dev.txt) and ferrolock's mapped call on the same
scenario."""

from __future__ import annotations

import threading

import pytest
import redis
import redis_lock  # type: ignore[import-untyped]

import ferrolock
from helpers import wait_until

row = pytest.mark.row


def pttl_rises(r: redis.Redis, key: str, what: str) -> None:
    """Returns once the key's PTTL went up (a renewal), failing after 10 s."""
    last = [r.pttl(key)]

    def risen() -> bool:
        now = r.pttl(key)
        assert now > 0, f"{key} expired"
        if now > last[0]:
            return True
        last[0] = now
        return False

    wait_until(risen, timeout=10, what=what)


@row("python-redis-lock/version")
def test_version() -> None:
    assert redis_lock.__version__ == "4.0.1"


@row("python-redis-lock/no-expire")
def test_no_expire(client: ferrolock.Client, r: redis.Redis, name: str) -> None:
    theirs = redis_lock.Lock(r, name)
    ours = client.lock(name)
    assert theirs.acquire() and ours.acquire()
    assert r.ttl(f"lock:{name}") == -1, "python-redis-lock's lock never expires"
    assert 0 < r.pttl(name) <= client.watchdog_timeout * 1000
    pttl_rises(r, name, "the watchdog renewing ferrolock's lease")
    theirs.release()
    ours.release()


@row("python-redis-lock/expire")
def test_expire(client: ferrolock.Client, r: redis.Redis, name: str) -> None:
    theirs = redis_lock.Lock(r, name, expire=60)
    ours = client.lock(name)
    assert theirs.acquire() and ours.acquire(lease=60.0)
    assert 59000 < r.pttl(f"lock:{name}") <= 60000 and 59000 < r.pttl(name) <= 60000
    theirs.release()
    ours.release()


@row("python-redis-lock/auto-renewal")
def test_auto_renewal(url: str, r: redis.Redis, name: str) -> None:
    # expire=2 renews every 2/3 of 2 s; ferrolock's watchdog of 2 s every third of it.
    theirs = redis_lock.Lock(r, name, expire=2, auto_renewal=True)
    with ferrolock.Client(url, watchdog_timeout=2.0) as client:
        ours = client.lock(name)
        assert theirs.acquire() and ours.acquire()
        for _ in range(2):
            pttl_rises(r, f"lock:{name}", "python-redis-lock's renewal thread")
            pttl_rises(r, name, "ferrolock's watchdog")
        theirs.release()
        ours.release()
    with pytest.raises(ValueError):
        redis_lock.Lock(r, name, auto_renewal=True)  # renewal needs an expire


@row("python-redis-lock/id")
def test_id(client: ferrolock.Client, client2: ferrolock.Client, r: redis.Redis, name: str) -> None:
    # python-redis-lock: the id is the key's value; any Lock with that id releases it.
    assert redis_lock.Lock(r, name, id="worker-1").acquire()
    assert r.get(f"lock:{name}") == b"worker-1"
    redis_lock.Lock(r, name, id="worker-1").release()
    assert not r.exists(f"lock:{name}")
    # ferrolock: an integer holder id inside the client's owner field.
    ours = client.lock(name, holder_id=1)
    assert ours.acquire()
    assert [h.owner for h in ours.status().holders] == [f"{client.id}:1"]
    with pytest.raises(ferrolock.NotOwnedError):
        client2.lock(name, holder_id=1).release()
    with pytest.raises(TypeError):
        client.lock(name, holder_id="worker-1")  # type: ignore[arg-type]
    ours.release()


@row("python-redis-lock/strict")
def test_strict(url: str, r: redis.Redis, name: str) -> None:
    class NotStrict:  # any object that is not a redis.StrictRedis (= redis.Redis)
        def register_script(self, script: bytes) -> object:
            return r.register_script(script)

    with pytest.raises(ValueError, match="StrictRedis"):
        redis_lock.Lock(NotStrict(), name)
    redis_lock.Lock(NotStrict(), name, strict=False)
    assert isinstance(r, redis.StrictRedis)
    redis_lock.Lock(r, name)  # any redis-py client passes strict=True
    # ferrolock takes a URL and connects itself.
    with pytest.raises(TypeError):
        ferrolock.Client(r)  # type: ignore[arg-type]
    ferrolock.Client(url).close()


@row("python-redis-lock/signal-expire")
def test_signal(client: ferrolock.Client, r: redis.Redis, name: str) -> None:
    theirs = redis_lock.Lock(r, name, signal_expire=1000)
    assert theirs.acquire()
    theirs.release()
    assert 0 < r.pttl(f"lock-signal:{name}") <= 1000, "the signal list waiters BLPOP on"
    ours = client.lock(name)
    assert ours.acquire()
    ours.release()
    assert not r.exists(name), "the wake-up is a pub/sub message: nothing left"


@row("python-redis-lock/acquire")
def test_acquire(client: ferrolock.Client, client2: ferrolock.Client, r: redis.Redis, name: str) -> None:
    held_theirs, held_ours = redis_lock.Lock(r, name), client2.lock(name)
    assert held_theirs.acquire() and held_ours.acquire()
    assert redis_lock.Lock(r, name).acquire(blocking=False) is False
    assert client.lock(name).acquire(blocking=False) is False
    results: list[bool] = []

    def wait_theirs() -> None:
        lock = redis_lock.Lock(r, name)
        results.append(lock.acquire())
        lock.release()

    def wait_ours() -> None:
        lock = client.lock(name)
        results.append(lock.acquire())
        lock.release()

    threads = [threading.Thread(target=wait_theirs), threading.Thread(target=wait_ours)]
    for t in threads:
        t.start()
    wait_until(lambda: client.metrics().waiters_now == 1, what="ferrolock's waiter parked")
    wait_until(lambda: any(c["cmd"] == "blpop" for c in r.client_list()), what="python-redis-lock in BLPOP")
    held_theirs.release()
    held_ours.release()
    for t in threads:
        t.join(10)
    assert results == [True, True]


@row("python-redis-lock/timeout")
def test_timeout(client: ferrolock.Client, client2: ferrolock.Client, r: redis.Redis, name: str) -> None:
    with pytest.raises(redis_lock.TimeoutNotUsable):
        redis_lock.Lock(r, name).acquire(blocking=False, timeout=5)
    with pytest.raises(ferrolock.InvalidArgumentError):
        client.lock(name).acquire(blocking=False, timeout=5.0)
    with pytest.raises(redis_lock.TimeoutTooLarge):
        redis_lock.Lock(r, name, expire=5).acquire(timeout=10)
    held_theirs, held_ours = redis_lock.Lock(r, name), client2.lock(name)
    assert held_theirs.acquire() and held_ours.acquire()
    # ferrolock takes a wait longer than the lease (and fractions of a second).
    assert client.lock(name).acquire(timeout=0.2, lease=0.1) is False
    # The timeout is whole seconds there (int()): 0.5 becomes 0, a BLPOP without end.
    results: list[bool] = []
    t = threading.Thread(target=lambda: results.append(redis_lock.Lock(r, name).acquire(timeout=0.5)))
    t.start()
    wait_until(lambda: any(c["cmd"] == "blpop" for c in r.client_list()), what="python-redis-lock in BLPOP")
    assert client.lock(name).acquire(timeout=0.5) is False  # ferrolock: half a second
    assert t.is_alive() and not results, "python-redis-lock still waiting"
    held_theirs.release()  # its signal ends that BLPOP, and it acquires
    t.join(10)
    assert results == [True]
    redis_lock.Lock(r, name).reset()
    held_ours.release()


@row("python-redis-lock/with")
def test_reentry(client: ferrolock.Client, r: redis.Redis, name: str) -> None:
    theirs = redis_lock.Lock(r, name)
    with theirs:
        with pytest.raises(redis_lock.AlreadyAcquired):
            with theirs:
                pass
    ours = client.lock(name)
    with ours:
        with ours:
            assert ours.hold_count() == 2
    assert not ours.locked()


@row("python-redis-lock/ctor-blocking")
def test_constructor_blocking(client: ferrolock.Client, client2: ferrolock.Client, r: redis.Redis, name: str) -> None:
    held_theirs, held_ours = redis_lock.Lock(r, name), client2.lock(name)
    assert held_theirs.acquire() and held_ours.acquire()
    with pytest.raises(redis_lock.NotAcquired):
        with redis_lock.Lock(r, name, blocking=False):
            pass
    with pytest.raises(ferrolock.LockTimeoutError):
        with client.lock(name).hold(timeout=0):
            pass
    held_theirs.release()
    held_ours.release()


@row("python-redis-lock/release")
def test_release(client: ferrolock.Client, client2: ferrolock.Client, r: redis.Redis, name: str) -> None:
    with pytest.raises(redis_lock.NotAcquired):
        redis_lock.Lock(r, name).release()
    with pytest.raises(ferrolock.NotOwnedError):
        client.lock(name).release()
    theirs = redis_lock.Lock(r, name)
    assert theirs.acquire()
    r.delete(f"lock:{name}")
    with pytest.raises(redis_lock.NotAcquired):
        theirs.release()
    ours = client.lock(name)
    assert ours.acquire()
    assert client2.lock(name).force_unlock()
    wait_until(lambda: ours.lost, what="the hold reported lost")
    with pytest.raises(ferrolock.LockLostError):
        ours.release()


@row("python-redis-lock/extend")
def test_extend(client: ferrolock.Client, r: redis.Redis, name: str) -> None:
    theirs = redis_lock.Lock(r, name, expire=60)
    ours = client.lock(name)
    assert theirs.acquire() and ours.acquire(lease=60.0)
    theirs.extend(expire=30)
    ours.extend(30.0, replace=True)
    assert 29000 < r.pttl(f"lock:{name}") <= 30000 and 29000 < r.pttl(name) <= 30000
    theirs.release()
    ours.release()
    theirs = redis_lock.Lock(r, name)
    assert theirs.acquire() and ours.acquire()
    with pytest.raises(redis_lock.NotExpirable):
        theirs.extend(expire=30)
    with pytest.raises(ferrolock.InvalidArgumentError):
        ours.extend(30.0, replace=True)
    theirs.release()
    ours.release()


@row("python-redis-lock/locked")
def test_locked(client: ferrolock.Client, client2: ferrolock.Client, r: redis.Redis, name: str) -> None:
    assert not redis_lock.Lock(r, name).locked() and not client.lock(name).locked()
    held_theirs, held_ours = redis_lock.Lock(r, name), client2.lock(name)
    assert held_theirs.acquire() and held_ours.acquire()
    assert redis_lock.Lock(r, name).locked() and client.lock(name).locked()  # held by anyone
    held_theirs.release()
    held_ours.release()


@row("python-redis-lock/owner")
def test_owner(client: ferrolock.Client, client2: ferrolock.Client, r: redis.Redis, name: str) -> None:
    theirs = redis_lock.Lock(r, name)
    ours = client2.lock(name)
    assert theirs.acquire() and ours.acquire()
    assert redis_lock.Lock(r, name).get_owner_id() == theirs.id
    (holder,) = client.lock(name).status().holders
    assert holder.owner.startswith(client2.id + ":") and holder.count == 1
    theirs.release()
    ours.release()


@row("python-redis-lock/reset")
def test_reset(client: ferrolock.Client, client2: ferrolock.Client, r: redis.Redis, name: str) -> None:
    theirs = redis_lock.Lock(r, name)
    assert theirs.acquire()
    redis_lock.Lock(r, name).reset()
    assert not r.exists(f"lock:{name}")
    with pytest.raises(redis_lock.NotAcquired):  # the holder learns it only at its release
        theirs.release()
    lost: list[str] = []
    ours = client.lock(name, on_lost=lambda lock: lost.append(lock.name))
    assert ours.acquire()
    assert client2.lock(name).force_unlock()
    wait_until(lambda: lost == [name], what="the holder told of the loss")
    with pytest.raises(ferrolock.LockLostError):
        ours.release()


@row("python-redis-lock/reset-all")
def test_reset_all(client: ferrolock.Client, r: redis.Redis, name: str) -> None:
    theirs = redis_lock.Lock(r, name)
    ours = client.lock(name)
    assert theirs.acquire() and ours.acquire()
    redis_lock.reset_all(r)
    assert not r.exists(f"lock:{name}")
    assert ours.owned(), "reset_all does not touch ferrolock's locks"
    ours.release()


@row("python-redis-lock/keys")
def test_same_name(client: ferrolock.Client, r: redis.Redis, name: str) -> None:
    theirs = redis_lock.Lock(r, name)
    ours = client.lock(name)
    assert theirs.acquire()
    assert ours.acquire(blocking=False), "the same name does not exclude the other library's lock"
    assert r.exists(name) and r.exists(f"lock:{name}")
    theirs.release()
    ours.release()
