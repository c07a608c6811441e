"""Leader election (blocking and asyncio): campaigns lead with growing terms,
resign hands over at once, leader() answers right after a campaign, a lost
leadership is told (on_lost, lost_event, wait_lost), observers tell every change
in order; and the minimum hold of a cron job (``min_hold``)."""

from __future__ import annotations

import asyncio
import os
import threading
import time

import pytest
import redis

import ferrolock
import ferrolock.aio
from conftest import WATCHDOG
from helpers import eventually, wait_until


def test_candidates_take_turns_and_leader_answers_at_once(
    client: ferrolock.Client, client2: ferrolock.Client, name: str
) -> None:
    first = client.election(name, label="replica-0")
    second = client2.election(name)
    assert first.leader() is None
    leadership = first.campaign()
    assert leadership.term == first.term and first.leading
    seen = second.leader()
    assert seen is not None and seen.term == leadership.term
    assert seen.holder.owner == first.owner
    assert (seen.holder.thread, seen.holder.pid) == ("replica-0", os.getpid())
    assert seen.description.startswith(f"term {leadership.term}: ")
    assert seen.lease_left is not None and 0 < seen.lease_left <= WATCHDOG

    assert second.campaign(timeout=0) is None
    won: list[int] = []
    waiter = threading.Thread(target=lambda: won.append(second.campaign().term))
    waiter.start()
    wait_until(lambda: client2.metrics().waiters_now == 1, what="the second candidate to wait")
    with pytest.raises(ferrolock.InvalidArgumentError, match="already leads"):
        first.campaign()
    assert leadership.resign() is True
    waiter.join(timeout=10)
    assert won and won[0] > leadership.term
    assert not first.leading and second.leading
    assert leadership.resign() is False, "resigned already"
    assert second.resign() is True and second.resign() is False
    assert first.leader() is None


def test_a_lost_leadership_is_told_by_callback_event_and_property(
    client: ferrolock.Client, r: redis.Redis, name: str
) -> None:
    told: list[tuple[str, str]] = []
    election = client.election(name, on_lost=lambda e, reason: told.append((e.name, reason)))
    with election.campaign() as leadership:
        assert not leadership.lost
        r.delete(name)  # as a force unlock or a failover would
        assert leadership.lost_event.wait(10), "the loss is told within a renewal"
        assert leadership.lost and leadership.lost_reason and "gone" in leadership.lost_reason
        wait_until(lambda: told == [(name, leadership.lost_reason)], what="on_lost to be called")
        assert not election.leading and election.term is None
    # Leaving the block resigned nothing (it was lost); the candidate may lead again.
    again = election.campaign(timeout=5)
    assert again is not None and again.term > leadership.term and not again.lost
    again.resign()


def test_an_observer_tells_every_leader_in_order(client: ferrolock.Client, client2: ferrolock.Client, name: str) -> None:
    observer = client.election(name).observe()
    assert next(observer) is None
    with pytest.raises(TimeoutError):
        observer.next(timeout=0.2)
    candidates = [client.election(name), client2.election(name)]
    terms = []
    for i in range(6):
        with candidates[i % 2].campaign() as leadership:
            terms.append(leadership.term)
    told: list[int] = []
    while len(told) < len(terms):
        change = observer.next(timeout=10)
        if change is not None:
            told.append(change.term)
    assert told == terms
    assert observer.next(timeout=10) is None, "the last resignation is told"
    del observer


def test_asyncio_campaign_resign_observe_and_wait_lost(url: str, r: redis.Redis, name: str) -> None:
    async def main() -> None:
        async with await ferrolock.aio.Client.connect(url, watchdog_timeout=WATCHDOG) as client:
            election = client.election(name)
            observer = await election.observe()
            assert await observer.next() is None
            async with await election.campaign() as leadership:
                leader = await election.leader()
                assert leader is not None and leader.term == leadership.term
                told = await observer.__anext__()
                assert told is not None and told.term == leadership.term
            assert await observer.next(timeout=10) is None
            other = client.election(name)
            assert (await other.campaign(timeout=0)) is not None
            # A campaign cancelled while it waits leads nothing.
            waiting = asyncio.ensure_future(election.campaign())
            await eventually(lambda: _waiting(client), what="the campaign to wait")
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            assert not election.leading
            held = other.leadership
            assert held is not None
            watcher = asyncio.ensure_future(held.wait_lost())
            r.delete(name)
            assert "gone" in (await asyncio.wait_for(watcher, 10) or "")
            assert await other.resign() is False
            del observer

    asyncio.run(main())


async def _waiting(client: ferrolock.aio.Client) -> bool:
    return client.metrics().waiters_now == 1


def test_min_hold_keeps_a_short_job_locked_and_later_callers_skip(client: ferrolock.Client, r: redis.Redis, name: str) -> None:
    runs: list[float] = []

    @client.synchronized(name, timeout=0, min_hold=1.0)
    def job() -> None:
        runs.append(time.monotonic())

    job()
    assert client.held_count() == 0, "given up locally at once"
    pttl = r.pttl(name)
    assert 0 < pttl <= 1000, pttl
    with pytest.raises(ferrolock.LockTimeoutError):
        job()
    wait_until(lambda: not r.exists(name), timeout=5, what="the minimum hold to end")
    assert time.monotonic() - runs[0] >= 0.95
    job()
    assert len(runs) == 2
    wait_until(lambda: not r.exists(name), timeout=5, what="the minimum hold to end")
    # A job longer than the minimum releases at its end; the asyncio twin too.
    with client.lock(name).hold(timeout=0, min_hold=0.05):
        time.sleep(0.1)
    assert not r.exists(name)


def test_asyncio_min_hold(url: str, r: redis.Redis, name: str) -> None:
    async def main() -> None:
        async with await ferrolock.aio.Client.connect(url, watchdog_timeout=WATCHDOG) as client:

            @client.synchronized(name, timeout=0, min_hold=0.5)
            async def job() -> int:
                return 7

            assert await job() == 7
            with pytest.raises(ferrolock.LockTimeoutError):
                await job()
            assert 0 < r.pttl(name) <= 500
            assert client.held_count() == 0

    asyncio.run(main())
    wait_until(lambda: not r.exists(name), timeout=5, what="the minimum hold to end")
