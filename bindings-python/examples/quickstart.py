"""Quick start of the blocking API: python examples/quickstart.py [redis-url]."""

from __future__ import annotations

import sys
import threading

import ferrolock


def main(url: str) -> None:
    with ferrolock.Client(url) as client:
        lock = client.lock("example:orders:42", on_lost=lambda lk: print(f"lost {lk.name}!"))
        total = 0

        def worker() -> None:
            nonlocal total
            for _ in range(10):
                with lock:  # a distributed threading.RLock
                    total += 1

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

        try:
            with lock.hold(timeout=5.0):  # raises LockTimeoutError after 5 s
                print("held; lease left:", lock.remaining_lease())
        except ferrolock.LockTimeoutError:
            print("busy")

        fenced = client.fenced_lock("example:ledger")
        with fenced:
            print("fencing token:", fenced.token)
        print("total:", total)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "redis://127.0.0.1:6379/0")
