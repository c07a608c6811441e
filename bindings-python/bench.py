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
"""

from __future__ import annotations

import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import redis
import redis.lock
import redis_lock  # type: ignore[import-untyped]

import ferrolock

THREADS = 8
SECTIONS = 50
HOLD = 0.001
UNCONTENDED = 2000
UNCONTENDED_PER_THREAD = 500


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


def uncontended(make: Factory) -> float:
    """Cycles per second of acquire+release by one thread, nobody else around."""
    lock = make(f"bench:u:{uuid.uuid4().hex}")
    for _ in range(50):  # warm-up
        lock.acquire()
        lock.release()
    start = time.perf_counter()
    for _ in range(UNCONTENDED):
        lock.acquire()
        lock.release()
    return UNCONTENDED / (time.perf_counter() - start)


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


def main() -> int:
    if shutil.which("redis-server") is None:
        print("redis-server is not on PATH", file=sys.stderr)
        return 2
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
        print(f"ferrolock / redis-py Lock, 1 thread: {rates['ferrolock'] / rates['redis-py Lock']:.2f}x")
        print()
        print(f"uncontended acquire+release, {THREADS} threads on their own lock names, {UNCONTENDED_PER_THREAD} cycles each")
        print(f"{'':20}{'cycles/s':>10}")
        for label, make in contenders:
            rates[label] = uncontended_threads(make)
            print(f"{label:20}{rates[label]:10.0f}")
        print(f"ferrolock / redis-py Lock, {THREADS} threads: {rates['ferrolock'] / rates['redis-py Lock']:.2f}x (target >= 3x)")
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
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
