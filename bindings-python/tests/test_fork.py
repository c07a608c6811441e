"""fork(): a client made in the parent fails clearly in the child (never hangs);
a client made in the child works."""

from __future__ import annotations

import json
import os
import select
import time

import pytest

import ferrolock


def _child(url: str, parent_client: ferrolock.Client, parent_lock: ferrolock.Lock, name: str) -> dict[str, object]:
    report: dict[str, object] = {}
    try:
        parent_lock.locked()
        report["parent_client"] = "worked"
    except ferrolock.InvalidArgumentError as e:
        report["parent_client"] = f"InvalidArgumentError: {e}"
    try:
        parent_client.lock(name + ":other")
        report["parent_lock_call"] = "worked"
    except ferrolock.InvalidArgumentError:
        report["parent_lock_call"] = "InvalidArgumentError"
    with ferrolock.Client(url, watchdog_timeout=1.5) as child_client:
        mine = child_client.lock(name)
        report["child_sees_parent_hold"] = not mine.acquire(blocking=False)
        other = child_client.lock(name + ":child")
        with other:
            report["child_lock_owned"] = other.owned()
        report["child_lock_free_after"] = not other.locked()
    return report


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # "process is multi-threaded, fork() may deadlock"
def test_fork(url: str, client: ferrolock.Client, name: str) -> None:
    lock = client.lock(name)
    lock.acquire()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        code = 1
        try:
            os.close(read_end)
            report = _child(url, client, lock, name)
            os.write(write_end, json.dumps(report).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    try:
        ready, _, _ = select.select([read_end], [], [], 30)
        assert ready, "the child hung"
        data = b""
        while chunk := os.read(read_end, 65536):
            data += chunk
    finally:
        os.close(read_end)
        deadline = time.monotonic() + 30
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                pytest.fail("the child did not exit")
            time.sleep(0.01)
    assert os.waitstatus_to_exitcode(status) == 0
    report = json.loads(data)
    parent_client = report["parent_client"]
    assert parent_client.startswith("InvalidArgumentError") and "fork" in parent_client
    assert report["parent_lock_call"] == "InvalidArgumentError"
    assert report["child_sees_parent_hold"] is True
    assert report["child_lock_owned"] is True
    assert report["child_lock_free_after"] is True
    # The parent's client is unaffected.
    assert lock.owned()
    lock.release()
    assert not lock.locked()
