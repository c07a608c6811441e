"""Functions run in child processes (importable by multiprocessing's spawn method)."""

from __future__ import annotations

import os

import redis

import ferrolock


def fenced_worker(url: str, name: str, log: str, rounds: int) -> None:
    """Takes the fenced lock ``rounds`` times; inside each critical section appends
    ``<pid>:<token>`` to the Redis list ``log``."""
    r = redis.Redis.from_url(url)
    with ferrolock.Client(url, watchdog_timeout=1.5) as client:
        lock = client.fenced_lock(name)
        last = 0
        for _ in range(rounds):
            with lock:
                token = lock.token
                assert token is not None and token > last
                last = token
                r.rpush(log, f"{os.getpid()}:{token}")
    r.close()
