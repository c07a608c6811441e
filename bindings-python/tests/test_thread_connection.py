"""Each thread's own connection (core's blocking/ and transport/host/): a blocking
call does its I/O on the calling thread, over a connection of that thread made on
its first call. When that connection dies or stalls, the call settles exactly once
through core's own connection and a new one comes; it closes with its thread and
with its client."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest
import redis

import ferrolock
from helpers import interrupt_when, wait_until


def named(r: redis.Redis, client: ferrolock.Client) -> dict[str, dict[str, str]]:
    """CLIENT LIST entries of the connections named by ``client``, by id."""
    return {str(c["id"]): {k: str(v) for k, v in c.items()} for c in r.client_list() if c["name"] == f"ferrolock:{client.id}"}


def first_call_connection(r: redis.Redis, client: ferrolock.Client, lock: ferrolock.Lock) -> tuple[str, str]:
    """A fresh client's first call goes over core's connection (it makes the
    thread's own, whose handshake ends with CLIENT SETNAME): that connection's id and
    the command the call sent."""
    before = set(named(r, client))
    lock.locked()
    # The thread's own connection last ran CLIENT SETNAME (Redis 6.2 lists it as "client").
    fresh = {i: c for i, c in named(r, client).items() if i not in before and c["cmd"] not in ("client|setname", "client")}
    assert len(fresh) == 1, [(i, c["cmd"]) for i, c in named(r, client).items()]
    ((core, entry),) = fresh.items()
    return core, entry["cmd"]


def own_connection(r: redis.Redis, client: ferrolock.Client, lock: ferrolock.Lock, cmd: str, known: set[str]) -> str:
    """The id of the calling thread's own connection, once its calls use it: the
    one connection not in ``known`` whose last command is this thread's ``cmd``."""
    found: list[str] = []

    def calls_use_it() -> bool:
        lock.locked()
        fresh = [i for i, c in named(r, client).items() if i not in known and c["cmd"] == cmd]
        assert len(fresh) <= 1, fresh
        found[:] = fresh
        return bool(fresh)

    wait_until(calls_use_it, what="a connection of this thread that takes its calls")
    return found[0]


def in_thread(body: Callable[[], None]) -> Iterator[None]:
    """Runs ``body`` in a thread; the generator's second step lets the thread end."""
    done = threading.Event()
    ready = threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        try:
            body()
        except BaseException as e:  # reported by the test's thread
            failure.append(e)
        ready.set()
        done.wait(30)

    t = threading.Thread(target=run)
    t.start()
    assert ready.wait(30), "the thread did not get ready"
    if failure:
        raise failure[0]
    yield
    done.set()
    t.join(30)
    assert not t.is_alive()


def test_every_thread_calls_over_its_own_connection_which_ends_with_the_thread(url: str, r: redis.Redis, name: str) -> None:
    with ferrolock.Client(url) as client:
        lock = client.lock(name)
        core, cmd = first_call_connection(r, client, lock)
        own = own_connection(r, client, lock, cmd, {core})
        assert lock.acquire()
        conns = named(r, client)
        assert conns[own]["cmd"] == "evalsha", conns
        lock.release()
        conns = named(r, client)
        assert conns[own]["cmd"] == "evalsha", conns
        # Core's own connection (kept for background work, such as deleting unlock
        # latches) ran no script.
        assert all(c["cmd"] != "evalsha" for i, c in conns.items() if i != own), conns

        known = {core, own}
        threads: list[Iterator[None]] = []
        owns: list[str] = []
        for k in range(3):

            def work(k: int = k) -> None:
                mine = client.lock(f"{name}:{k}")
                owns.append(own_connection(r, client, mine, cmd, known))
                assert mine.acquire()
                assert named(r, client)[owns[-1]]["cmd"] == "evalsha"
                mine.release()

            thread = in_thread(work)
            next(thread)
            threads.append(thread)
            known.add(owns[-1])
        assert len(set(owns)) == 3
        # A thread's connection closes when the thread ends; the others stay.
        for thread, gone in zip(threads, owns):
            next(thread, None)
            wait_until(lambda: gone not in named(r, client), what="the ended thread's connection to close")
        assert own in named(r, client)


def test_closing_the_client_closes_the_connection_of_an_idle_thread(url: str, r: redis.Redis, name: str) -> None:
    client = ferrolock.Client(url)
    lock = client.lock(name)
    core, cmd = first_call_connection(r, client, lock)
    owns: list[str] = []

    def work() -> None:
        mine = client.lock(name + ":t")
        owns.append(own_connection(r, client, mine, cmd, {core}))

    thread = in_thread(work)
    next(thread)
    # The thread waits on an event, making no call: its connection still closes.
    client.close()
    wait_until(lambda: not named(r, client), what="every connection of the closed client to close")
    next(thread, None)


@pytest.fixture
def unpause(r: redis.Redis) -> Iterator[None]:
    yield
    r.client_unpause()


def test_a_connection_killed_under_a_call_settles_it_once_and_a_new_one_comes(
    url: str, r: redis.Redis, name: str, unpause: None
) -> None:
    with ferrolock.Client(url) as client:
        lock = client.lock(name + ":2")
        core, cmd = first_call_connection(r, client, lock)
        own = own_connection(r, client, lock, cmd, {core})
        r.client_pause(5000, all=False)  # the acquire's script waits on the server
        killer = threading.Thread(target=kill_when_blocked, args=(r, client, own))
        killer.start()
        assert lock.acquire(timeout=15)
        killer.join(15)
        assert not killer.is_alive()
        assert list(r.hgetall(name + ":2").values()) == [b"1"], "acquired more than once"
        fresh = own_connection(r, client, lock, cmd, {core, own})
        assert fresh != own
        lock.release()
        assert r.exists(name + ":2") == 0


def blocked(entry: dict[str, str]) -> bool:
    """True while the connection has a command waiting (paused clients hold it in
    their query buffer or show the pause flag)."""
    return "P" in entry.get("flags", "") or "b" in entry.get("flags", "") or entry.get("qbuf", "0") not in ("", "0")


def kill_when_blocked(r: redis.Redis, client: ferrolock.Client, conn: str) -> None:
    try:
        wait_until(lambda: blocked(named(r, client).get(conn, {})), what="the acquire waiting on the server")
        r.client_kill_filter(_id=conn)
    finally:
        r.client_unpause()


def test_a_reply_overdue_past_the_response_timeout_closes_the_connection(
    url: str, r: redis.Redis, name: str, unpause: None
) -> None:
    with ferrolock.Client(url, response_timeout=0.3) as client:
        lock = client.lock(name)
        core, cmd = first_call_connection(r, client, lock)
        own = own_connection(r, client, lock, cmd, {core})
        r.client_pause(1500)  # nothing answers for 1.5 s
        assert lock.acquire(timeout=15)
        assert list(r.hgetall(name).values()) == [b"1"]
        # The stalled connection was closed by us: it is gone from the server.
        wait_until(lambda: own not in named(r, client), what="the stalled connection to close")
        lock.release()


def test_an_interrupted_call_is_settled_while_its_thread_idles(url: str, r: redis.Redis, name: str, unpause: None) -> None:
    # Ctrl-C while an acquire's script waits on a paused server leaves that request
    # behind. Only its thread reads the thread's connection, and here the thread
    # makes no other call (the other client below runs on a thread of its own): the acquire must
    # still be settled.
    with ferrolock.Client(url, response_timeout=5.0) as client:
        lock = client.lock(name)
        core, cmd = first_call_connection(r, client, lock)
        own = own_connection(r, client, lock, cmd, {core})
        r.client_pause(60_000, all=False)

        interrupt_when(lambda: blocked(named(r, client).get(own, {})), lock.acquire, "the acquire waiting on the server")
        r.client_unpause()
        # Once the server runs the abandoned acquire (or core's retry of it), it is
        # undone: another client gets the lock well within its 30 s lease. (Until the
        # server runs it, the lock merely looks free: no check of that alone.)
        got: list[bool] = []

        def other_client() -> None:
            with ferrolock.Client(url) as other_client:
                other = other_client.lock(name)
                got.append(other.acquire(timeout=10))
                if got[-1]:
                    other.release()

        t = threading.Thread(target=other_client)
        t.start()
        t.join(30)
        assert got == [True], "the interrupted acquire was not undone"
        wait_until(lambda: lock.hold_count() == 0, what="the interrupted acquire to leave nothing held here")
        assert lock.acquire(timeout=5)
        lock.release()
