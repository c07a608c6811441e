"""Quick start of the asyncio API: python examples/quickstart_aio.py [redis-url]."""

from __future__ import annotations

import asyncio
import sys

import ferrolock.aio


async def main(url: str) -> None:
    async with await ferrolock.aio.Client.connect(url) as client:
        lock = client.lock("example:orders:42")
        total = 0

        async def worker() -> None:
            nonlocal total
            for _ in range(10):
                async with lock:  # holder = (lock object, task)
                    value = total
                    await asyncio.sleep(0)
                    total = value + 1

        await asyncio.gather(*(worker() for _ in range(4)))
        async with lock.hold(timeout=5.0):
            print("held; lease left:", await lock.remaining_lease())
        print("total:", total)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "redis://127.0.0.1:6379/0"))
