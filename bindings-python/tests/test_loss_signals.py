"""Loss signals: lock.lost_event (threading.Event-like), await lock.wait_lost()
(asyncio), and on_lost(lock, reason) with lock.lost true inside the callback."""

from __future__ import annotations

import asyncio
import threading

import pytest

import ferrolock
import ferrolock.aio
from conftest import WATCHDOG
from helpers import eventually, kept_in_thread, wait_until


def test_lost_event(client: ferrolock.Client, client2: ferrolock.Client, name: str) -> None:
    lock = client.lock(name)
    lock.acquire()
    event = lock.lost_event
    assert isinstance(event, threading.Event) and isinstance(event, ferrolock.LostEvent)
    assert not event.is_set() and event.reason is None
    assert client2.lock(name).force_unlock()
    # Set by the watchdog's next renewal, which finds the owner field gone.
    assert event.wait(WATCHDOG * 3)
    assert event.reason is not None and "owner field gone" in event.reason
    assert lock.lost and lock.lost_event is event
    with pytest.raises(ferrolock.LockLostError):
        lock.release()
    # A new hold clears it (the same event object).
    assert lock.acquire(blocking=False)
    assert not event.is_set() and event.reason is None
    lock.release()
    assert not event.is_set()


def test_lost_event_is_per_thread(client: ferrolock.Client, name: str) -> None:
    lock = client.lock(name, holder_id=None)
    mine = lock.lost_event
    theirs: list[ferrolock.LostEvent] = []
    t = threading.Thread(target=lambda: theirs.append(lock.lost_event))
    t.start()
    t.join(10)
    assert theirs and theirs[0] is not mine


def test_lease_expiry_sets_it(client: ferrolock.Client, name: str) -> None:
    lock = client.lock(name)
    assert lock.acquire(lease=0.3)
    assert lock.lost_event.wait(5)
    assert "lease" in (lock.lost_event.reason or "")


def test_on_lost_gets_the_reason_and_sees_lost(
    client: ferrolock.Client, client2: ferrolock.Client, name: str
) -> None:
    seen: list[tuple[str, bool, bool, bool, str | None]] = []
    old_style: list[ferrolock.Lock] = []
    done = threading.Event()

    def on_lost(lock: ferrolock.Lock, reason: str) -> None:
        # On a background thread: lock.lost answers for the hold that was lost.
        seen.append((reason, lock.lost, lock.lost_event.is_set(), lock.owned(), lock.lost_event.reason))
        done.set()

    lock = client.lock(name, on_lost=on_lost)
    legacy = client.lock(name + ":legacy", on_lost=old_style.append)  # the one-argument form still works
    lock.acquire()
    legacy.acquire()
    assert client2.lock(name).force_unlock()
    assert client2.lock(name + ":legacy").force_unlock()
    assert done.wait(WATCHDOG * 3)
    [(reason, lost, event_set, owned, event_reason)] = seen
    assert "owner field gone" in reason and name not in reason  # the reason alone, not the whole message
    assert lost and event_set and not owned and event_reason == reason
    assert legacy.lost_event.wait(WATCHDOG * 3)
    assert lock.lost
    with pytest.raises(ferrolock.LockLostError):
        lock.release()
    with pytest.raises(ferrolock.LockLostError):
        legacy.release()
    wait_until(lambda: old_style == [legacy], what="the one-argument on_lost")


def test_on_lost_answers_for_the_thread_whose_hold_was_lost(
    client: ferrolock.Client, client2: ferrolock.Client, name: str
) -> None:
    # Several threads used the object (slots in several threads' tables); the one
    # that held has ended since, leaving its hold: on_lost still answers for it,
    # and the event that thread handed out is set.
    seen: list[tuple[bool, bool, str | None]] = []
    done = threading.Event()

    def on_lost(lock: ferrolock.Lock, reason: str) -> None:
        seen.append((lock.lost, lock.lost_event.is_set(), lock.lost_event.reason))
        done.set()

    lock = client.lock(name, on_lost=on_lost)
    assert lock.acquire(blocking=False)
    lock.release()  # this thread's slot first
    events: list[ferrolock.LostEvent] = []

    def hold() -> None:
        assert lock.acquire(blocking=False)
        events.append(lock.lost_event)

    t = threading.Thread(target=hold, name="held-and-ended")
    t.start()
    t.join(10)
    assert events
    assert client2.lock(name).force_unlock()
    assert events[0].wait(WATCHDOG * 3)
    assert events[0].reason is not None and "owner field gone" in events[0].reason
    assert done.wait(WATCHDOG * 3)
    # The ended thread's slot went with it: the callback sees no slot of its own
    # (lock.lost answers for the calling thread, which holds nothing).
    assert seen == [(False, False, None)]
    assert not lock.lost  # this thread's own hold was never lost

    other = client.lock(name + ":live", on_lost=on_lost)
    assert other.acquire(blocking=False)
    other.release()

    def hold_on() -> None:
        assert other.acquire(blocking=False)

    with kept_in_thread(hold_on, "still-holding"):
        done.clear()
        assert client2.lock(name + ":live").force_unlock()
        assert done.wait(WATCHDOG * 3)
        # The holding thread is alive: its slot is found, and the callback sees it lost.
        assert seen[1][0] and seen[1][1] and seen[1][2] is not None


def test_asyncio_wait_lost(url: str, name: str) -> None:
    async def main() -> None:
        async with await ferrolock.aio.Client.connect(url, watchdog_timeout=WATCHDOG) as client, \
                await ferrolock.aio.Client.connect(url, watchdog_timeout=WATCHDOG) as client2:
            calls: list[tuple[str, bool]] = []
            loop = asyncio.get_running_loop()
            called = asyncio.Event()

            def on_lost(lock: ferrolock.aio.Lock, reason: str) -> None:
                calls.append((reason, lock.lost))
                loop.call_soon_threadsafe(called.set)

            lock = client.lock(name, on_lost=on_lost)
            with pytest.raises(ferrolock.NotOwnedError):
                lock.wait_lost().close()  # holds nothing yet
            await lock.acquire()
            watcher = asyncio.create_task(lock.wait_lost())  # captured in the holding task
            await asyncio.sleep(0)
            assert not watcher.done()
            assert await client2.lock(name).force_unlock()
            reason = await asyncio.wait_for(watcher, WATCHDOG * 3)
            assert reason is not None and "owner field gone" in reason
            await asyncio.wait_for(called.wait(), 5)
            assert calls == [(reason, True)]
            assert lock.lost and lock.lost_event.is_set()
            # Already lost: answers at once.
            assert await lock.wait_lost() == reason
            with pytest.raises(ferrolock.LockLostError):
                await lock.release()

            # A hold that ends by release: the waiter gets None.
            await lock.acquire()
            assert not lock.lost_event.is_set()
            watcher = asyncio.create_task(lock.wait_lost())
            await asyncio.sleep(0)
            await lock.release()
            assert await asyncio.wait_for(watcher, 5) is None
            await eventually(lambda: asyncio.sleep(0, client.held_count() == 0), what="nothing held")

    asyncio.run(main())
