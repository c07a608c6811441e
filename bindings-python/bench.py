"""Benchmark: ferrolock vs redis-py's Lock vs python-redis-lock, from Python threads.

    python bindings-python/bench.py

Starts its own redis-server (from PATH) on a free loopback port and measures, in
one run on that one server:

* uncontended acquire+release cycles/s: one thread (latency-bound: every correct
  lock needs two round-trips, shown as a multiple of the same run's PING), and
  8 threads each on its own lock name (throughput: one client shared by the
  threads, as a worker pool would use it);
* 8 threads x 50 critical sections each holding the lock 1 ms: efficiency (time
  the lock was held / wall time), hand-off p50/p99 (end of one critical section to
  the start of the next), the longest wait of any acquire, and lost updates of a
  non-atomic read-sleep-write counter (must be 0).

redis-py's Lock runs with its default ``sleep=0.1`` (it polls); python-redis-lock
waits on BLPOP; ferrolock waits on pub/sub.

Then a Redlock section: five more redis-servers (independent masters), and
``ferrolock.RedLock`` against pottery's ``Redlock`` over the first 3 and over all 5
(one client per server): uncontended cycles/s (one thread) and the same contended
run as above, on one name. pottery is a bench-only peer, listed in
``bench-requirements.txt`` beside this file: when it is missing, this script
installs it into its own interpreter with pip (as build.sh installs the other
peers into the venv). Beside the figures, issue 30's target for ferrolock's Redlock
under contention (efficiency >= 0.85). ``BENCH_ONLY=redlock`` runs that section alone.

Last, memory per hold: this process's RSS before and after taking ``BENCH_HOLDS``
(default 20000) locks on distinct names on one client with an explicit lease (no
renewal), divided by that count, against issue 30's target (<= 2 KB); then the
Python objects' share of each part (tracemalloc, the same again on a new client
and thread): the rest is native (the core's handle and hold, the binding's).
Then the same with ``ferrolock.aio`` as a service holds them: ``BENCH_AIO_HOLDS``
(default 100000) locks taken by 200 tasks on one client, the watchdog renewing each
(no lease), RSS growth after gc per hold, against issue 43's target (<= 2 KB).
``BENCH_ONLY=memory`` runs the memory sections alone.

``BENCH_ONLY=close`` times closing an asyncio client that holds ``BENCH_AIO_HOLDS``
locks taken by 200 tasks, each with an ``on_lost`` callback, watchdog lease 3 s (issue
39's target: <= 10 s, no hold reported lost by the close, no key left held). Not in the
default run: it shows the close under load of holds, not a speed ratio.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import redis
import redis.lock
import redis_lock  # type: ignore[import-untyped]

import ferrolock
import ferrolock.aio

THREADS = 8
SECTIONS = 50
HOLD = 0.001
UNCONTENDED = 2000
UNCONTENDED_PER_THREAD = 500
REDLOCK_SIZES = (3, 5)
REDLOCK_UNCONTENDED = 1000
HOLDS = int(os.environ.get("BENCH_HOLDS", "20000"))
AIO_HOLDS = int(os.environ.get("BENCH_AIO_HOLDS", "100000"))
AIO_TASKS = 200
BENCH_REQUIREMENTS = Path(__file__).resolve().parent / "bench-requirements.txt"


class AnyLock(Protocol):
    def acquire(self) -> object: ...
    def release(self) -> object: ...


# A factory makes the lock object a thread uses for a name.
Factory = Callable[[str], AnyLock]


@dataclass
class Contended:
    efficiency: float
    handoff_p50_ms: float
    handoff_p99_ms: float
    longest_wait_ms: float
    lost_updates: int


def start_redis() -> tuple[subprocess.Popen[bytes], int, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    tmp = tempfile.mkdtemp(prefix="ferrolock-bench-")
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", tmp],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    r = redis.Redis(port=port)
    deadline = time.monotonic() + 10
    while True:
        try:
            r.ping()
            break
        except redis.exceptions.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)
    r.close()
    return proc, port, tmp


def ping_rtt(r: redis.Redis, n: int = 2000) -> float:
    r.ping()
    start = time.perf_counter()
    for _ in range(n):
        r.ping()
    return (time.perf_counter() - start) / n


def uncontended(make: Factory, cycles: int = UNCONTENDED) -> float:
    """Cycles per second of acquire+release by one thread, nobody else around."""
    lock = make(f"bench:u:{uuid.uuid4().hex}")
    for _ in range(50):  # warm-up
        lock.acquire()
        lock.release()
    start = time.perf_counter()
    for _ in range(cycles):
        lock.acquire()
        lock.release()
    return cycles / (time.perf_counter() - start)


def run_threads(worker: Callable[[], None], barrier: threading.Barrier) -> float:
    """Runs THREADS threads of ``worker``, which meet at ``barrier`` when set up;
    returns the seconds from that moment until the last one ends."""
    threads = [threading.Thread(target=worker) for _ in range(THREADS)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    return time.perf_counter() - start


def uncontended_threads(make: Factory) -> float:
    """Total cycles per second of THREADS threads, each on its own lock name."""
    barrier = threading.Barrier(THREADS + 1)

    def worker() -> None:
        lock = make(f"bench:t:{uuid.uuid4().hex}")
        for _ in range(20):  # warm-up
            lock.acquire()
            lock.release()
        barrier.wait()
        for _ in range(UNCONTENDED_PER_THREAD):
            lock.acquire()
            lock.release()

    return THREADS * UNCONTENDED_PER_THREAD / run_threads(worker, barrier)


def contended(make: Factory) -> Contended:
    name = f"bench:c:{uuid.uuid4().hex}"
    sections: list[tuple[float, float]] = []  # (acquired at, release started at)
    waits: list[float] = []
    record = threading.Lock()
    counter = 0
    barrier = threading.Barrier(THREADS + 1)

    def worker() -> None:
        nonlocal counter
        lock = make(name)
        barrier.wait()
        for _ in range(SECTIONS):
            asked = time.perf_counter()
            lock.acquire()
            got = time.perf_counter()
            value = counter  # read ...
            time.sleep(HOLD)  # ... hold the lock 1 ms ...
            counter = value + 1  # ... write: loses updates without exclusion
            done = time.perf_counter()
            lock.release()
            with record:
                sections.append((got, done))
                waits.append(got - asked)

    wall = run_threads(worker, barrier)
    sections.sort()
    held = sum(end - begin for begin, end in sections)
    handoffs = [nxt[0] - cur[1] for cur, nxt in zip(sections, sections[1:])]
    q = statistics.quantiles(handoffs, n=100)
    return Contended(
        efficiency=held / wall,
        handoff_p50_ms=statistics.median(handoffs) * 1e3,
        handoff_p99_ms=q[98] * 1e3,
        longest_wait_ms=max(waits) * 1e3,
        lost_updates=THREADS * SECTIONS - counter,
    )


def load_pottery() -> ModuleType:
    """pottery (the Redlock peer), installed from bench-requirements.txt into this
    interpreter if missing. Imported by name so that mypy --strict passes with or
    without it installed."""
    try:
        return importlib.import_module("pottery")
    except ImportError:
        pass
    print(f"bench.py: installing the Redlock peer from {BENCH_REQUIREMENTS.name}", file=sys.stderr)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r", str(BENCH_REQUIREMENTS)],
        check=True,
    )
    importlib.invalidate_caches()
    return importlib.import_module("pottery")


def redlock_section(pottery: ModuleType) -> None:
    """ferrolock.RedLock vs pottery's Redlock over 3 and over 5 local redis-servers."""
    servers = []
    try:
        for _ in range(max(REDLOCK_SIZES)):
            servers.append(start_redis())
        ports = [port for _, port, _ in servers]
        print(
            f"redlock: ferrolock.RedLock vs pottery Redlock over N of {len(ports)} more redis-servers "
            f"({', '.join(map(str, ports))}), one client per server"
        )
        print(
            f"uncontended: 1 thread, {REDLOCK_UNCONTENDED} cycles; contended: {THREADS} threads x {SECTIONS} "
            f"critical sections holding {HOLD * 1e3:.0f} ms on one name, count of a non-atomic counter"
        )
        print(
            f"{'':20}{'N':>2}{'cycles/s':>10}{'us/cycle':>10}{'efficiency':>11}{'handoff p50':>13}"
            f"{'handoff p99':>13}{'longest wait':>14}{'count':>7}{'lost':>6}"
        )
        ratios: list[str] = []
        for n in REDLOCK_SIZES:
            urls = [f"redis://127.0.0.1:{port}/0" for port in ports[:n]]
            clients = [ferrolock.Client(url) for url in urls]
            masters = [redis.Redis(port=port) for port in ports[:n]]
            shared: dict[str, ferrolock.RedLock] = {}

            def ferro(name: str) -> AnyLock:
                # One RedLock (over one lock per client) shared by all threads: each
                # thread is its own holder. It waits on each member's pub/sub.
                return shared.setdefault(name, ferrolock.RedLock([c.lock(name) for c in clients]))

            def pottery_redlock(name: str) -> AnyLock:
                # One Redlock per thread (it keeps its holder's token in the object).
                # Defaults: auto_release_time 10 s; acquire() blocks with timeout=-1,
                # i.e. retries until it gets a majority, sleeping uniform(0, 0.2) s
                # between rounds: it always succeeds under contention.
                lock: AnyLock = pottery.Redlock(key=name, masters=masters)
                return lock

            rates: dict[str, float] = {}
            effs: dict[str, float] = {}
            for label, make in (("ferrolock RedLock", ferro), ("pottery Redlock", pottery_redlock)):
                rates[label] = uncontended(make, REDLOCK_UNCONTENDED)
                c = contended(make)
                effs[label] = c.efficiency
                count = THREADS * SECTIONS - c.lost_updates
                print(
                    f"{label:20}{n:2d}{rates[label]:10.0f}{1e6 / rates[label]:10.1f}{c.efficiency:11.2f}"
                    f"{c.handoff_p50_ms:10.2f} ms{c.handoff_p99_ms:10.2f} ms{c.longest_wait_ms:11.1f} ms"
                    f"{count:7d}{c.lost_updates:6d}"
                )
            eff = effs["ferrolock RedLock"]
            ratios.append(
                f"redlock N={n}: ferrolock/pottery uncontended "
                f"{rates['ferrolock RedLock'] / rates['pottery Redlock']:.2f}x, contended efficiency "
                f"ferrolock {eff:.2f} (target >= 0.85: {'met' if eff >= 0.85 else 'NOT met'}) "
                f"vs pottery {effs['pottery Redlock']:.2f}"
            )
            for client in clients:
                client.close()
            for master in masters:
                master.close()
        for line in ratios:
            print(line)
    finally:
        for proc, _, tmp in servers:
            proc.kill()
            proc.wait()
            shutil.rmtree(tmp, ignore_errors=True)


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def python_heap(url: str, n: int) -> tuple[float, float]:
    """Python heap per lock object and per hold (tracemalloc): ``n`` holds on new
    names, on a new client, in a new thread (whose tables start empty as the
    first run's did)."""
    sizes: list[int] = []

    def run() -> None:
        client = ferrolock.Client(url)
        warm = client.lock("bench:mem:py:warm")
        warm.acquire(lease=600)
        warm.release()
        tracemalloc.start()
        try:
            sizes.append(tracemalloc.get_traced_memory()[0])
            held = [client.lock(f"bench:mem:py:{i}") for i in range(n)]
            sizes.append(tracemalloc.get_traced_memory()[0])
            for lock in held:
                lock.acquire(lease=600)
            sizes.append(tracemalloc.get_traced_memory()[0])
        finally:
            tracemalloc.stop()
            client.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    start, made, taken = sizes
    return (made - start) / n, (taken - made) / n


def memory_section(n: int = HOLDS) -> None:
    """RSS per held lock: Lock objects, their native state and the client's hold registry."""
    proc, port, tmp = start_redis()
    try:
        client = ferrolock.Client(f"redis://127.0.0.1:{port}/0")
        warm = client.lock("bench:mem:warm")  # connection, scripts, runtime threads
        warm.acquire(lease=600)
        warm.release()
        # The lock objects first, then the holds: the two shares of the figure.
        before = rss_bytes()
        held = [client.lock(f"bench:mem:{i}") for i in range(n)]
        handles = rss_bytes()
        for lock in held:
            lock.acquire(lease=600)
        after = rss_bytes()
        per_hold = (after - before) / n
        print(f"memory: {n} held locks (distinct names, one client, explicit lease), RSS +{(after - before) / 2**20:.1f} MiB")
        print(f"  per hold {per_hold:.0f} B (target <= 2 KB: {'met' if per_hold <= 2048 else 'NOT met'})")
        print(f"  of which the Lock object {(handles - before) / n:.0f} B, the hold on top {(after - handles) / n:.0f} B")
        client.close()
        objects, holds = python_heap(f"redis://127.0.0.1:{port}/0", n)
        print(f"  Python objects (tracemalloc, again): Lock object {objects:.0f} B, hold {holds:.0f} B")
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


async def hold_in_tasks(
    client: ferrolock.aio.Client, prefix: str, per_task: int, tasks: int, end: asyncio.Event, then_release: bool, **options: Any
) -> list[asyncio.Task[None]]:
    """Has ``tasks`` tasks take ``per_task`` locks each (``prefix:task:i``, made with
    ``options``) and returns once every one is taken; each task then waits for ``end``
    and, with ``then_release``, releases its locks."""
    taken = asyncio.Event()
    done = 0

    async def holder(t: int) -> None:
        nonlocal done
        locks = [client.lock(f"{prefix}:{t}:{i}", **options) for i in range(per_task)]
        for lock in locks:
            await lock.acquire()
        done += 1
        if done == tasks:
            taken.set()
        await end.wait()
        if then_release:
            for lock in locks:
                await lock.release()

    running = [asyncio.create_task(holder(t)) for t in range(tasks)]
    await taken.wait()
    return running


def asyncio_memory_section(n: int = AIO_HOLDS, tasks: int = AIO_TASKS) -> None:
    """RSS per hold with ferrolock.aio as a service holds them: ``n`` locks taken by
    ``tasks`` tasks on one client, the watchdog renewing every one (no lease), measured
    after gc once every hold is taken."""
    proc, port, tmp = start_redis()

    async def run() -> None:
        client = await ferrolock.aio.Client.connect(f"redis://127.0.0.1:{port}/0")
        try:
            warm = client.lock("bench:aio:warm")  # connection, scripts, runtime threads
            await warm.acquire()
            await warm.release()
            per_task = n // tasks
            release = asyncio.Event()
            gc.collect()
            before = rss_bytes()
            running = await hold_in_tasks(client, "bench:aio", per_task, tasks, release, then_release=True)
            gc.collect()
            after = rss_bytes()
            per_hold = (after - before) / (per_task * tasks)
            print(
                f"memory, asyncio: {per_task * tasks} held locks taken by {tasks} tasks (one client, watchdog), "
                f"RSS +{(after - before) / 2**20:.1f} MiB"
            )
            print(f"  per hold {per_hold:.0f} B (target <= 2 KB: {'met' if per_hold <= 2048 else 'NOT met'})")
            release.set()
            await asyncio.gather(*running)
        finally:
            await client.close()

    try:
        asyncio.run(run())
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def asyncio_close_section(n: int = AIO_HOLDS, tasks: int = AIO_TASKS, lease: float = 3.0) -> None:
    """Closes an asyncio client holding ``n`` locks (``tasks`` tasks took them, each lock
    with an ``on_lost`` callback, watchdog ``lease``): how long the close takes, how many
    holds it reported lost, and how many lock keys Redis still has afterwards."""
    proc, port, tmp = start_redis()
    url = f"redis://127.0.0.1:{port}/0"
    lost: list[str] = []

    async def run() -> float:
        client = await ferrolock.aio.Client.connect(url, watchdog_timeout=lease)
        per_task = n // tasks
        closed = asyncio.Event()
        # The holds' tasks live on while the client closes, as a service's do.
        running = await hold_in_tasks(
            client, "bench:close", per_task, tasks, closed, then_release=False, on_lost=lambda _lock, reason: lost.append(reason)
        )
        held = client.held_count()
        if held != per_task * tasks:
            raise RuntimeError(f"{held} held, {per_task * tasks} taken")
        started = time.perf_counter()
        await client.close()
        took = time.perf_counter() - started
        closed.set()
        await asyncio.gather(*running)
        return took

    try:
        took = asyncio.run(run())
        r = redis.Redis(port=port)
        left = sum(1 for _ in r.scan_iter(match="bench:close:*", count=10_000))
        r.close()
        verdict = "met" if took <= 10 and not lost and left == 0 else "NOT met"
        print(
            f"close, asyncio: {n // tasks * tasks} holds taken by {tasks} tasks, on_lost callbacks, {lease:g} s watchdog: "
            f"closed in {took:.1f} s, {len(lost)} reported lost, {left} lock keys left "
            f"(target <= 10 s, 0, 0: {verdict})"
        )
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    if shutil.which("redis-server") is None:
        print("redis-server is not on PATH", file=sys.stderr)
        return 2
    if os.environ.get("BENCH_ONLY") == "memory":
        memory_section()
        print()
        asyncio_memory_section()
        return 0
    if os.environ.get("BENCH_ONLY") == "close":
        asyncio_close_section()
        return 0
    pottery = load_pottery()
    if os.environ.get("BENCH_ONLY") == "redlock":
        redlock_section(pottery)
        return 0
    proc, port, tmp = start_redis()
    url = f"redis://127.0.0.1:{port}/0"
    try:
        r = redis.Redis(port=port)
        client = ferrolock.Client(url)
        shared: dict[str, ferrolock.Lock] = {}

        def ferro(name: str) -> AnyLock:
            # One lock object shared by all threads: holders are (object, thread).
            return shared.setdefault(name, client.lock(name))

        def redis_py(name: str) -> AnyLock:
            lock: AnyLock = redis.lock.Lock(r, name, timeout=30)  # default sleep=0.1
            return lock

        def python_redis_lock(name: str) -> AnyLock:
            lock: AnyLock = redis_lock.Lock(r, name, expire=30)
            return lock

        contenders: list[tuple[str, Factory]] = [
            ("ferrolock", ferro),
            ("redis-py Lock", redis_py),
            ("python-redis-lock", python_redis_lock),
        ]
        rtt = ping_rtt(r)
        print(f"redis-server {port}, Python {sys.version.split()[0]}, PING round-trip {rtt * 1e6:.1f} us (redis-py)")
        print()
        print(f"uncontended acquire+release, 1 thread, {UNCONTENDED} cycles")
        print(f"{'':20}{'cycles/s':>10}{'us/cycle':>10}{'PINGs/cycle':>13}")
        rates: dict[str, float] = {}
        for label, make in contenders:
            rate = uncontended(make)
            rates[label] = rate
            print(f"{label:20}{rate:10.0f}{1e6 / rate:10.1f}{1 / rate / rtt:13.2f}")
        print(f"ferrolock / redis-py Lock, 1 thread: {rates['ferrolock'] / rates['redis-py Lock']:.2f}x (target >= 1.3x)")
        print()
        print(f"uncontended acquire+release, {THREADS} threads on their own lock names, {UNCONTENDED_PER_THREAD} cycles each")
        print(f"{'':20}{'cycles/s':>10}")
        for label, make in contenders:
            rates[label] = uncontended_threads(make)
            print(f"{label:20}{rates[label]:10.0f}")
        print(f"ferrolock / redis-py Lock, {THREADS} threads: {rates['ferrolock'] / rates['redis-py Lock']:.2f}x (target >= 5x)")
        print()
        print(f"contended: {THREADS} threads x {SECTIONS} critical sections holding {HOLD * 1e3:.0f} ms")
        print(f"{'':20}{'efficiency':>11}{'handoff p50':>13}{'handoff p99':>13}{'longest wait':>14}{'lost updates':>14}")
        for label, make in contenders:
            c = contended(make)
            print(
                f"{label:20}{c.efficiency:11.2f}{c.handoff_p50_ms:10.2f} ms{c.handoff_p99_ms:10.2f} ms"
                f"{c.longest_wait_ms:11.1f} ms{c.lost_updates:14d}"
            )
        print("targets (ferrolock): efficiency >= 0.9, hand-off p50 <= 0.5 ms, lost updates 0")
        client.close()
        r.close()
        print()
        redlock_section(pottery)
        print()
        memory_section()
        print()
        asyncio_memory_section()
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
