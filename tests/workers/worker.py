"""The Python worker of the cross-language tests and of ``ferrolock demo``: a thin
user of the sync API of the ``ferrolock`` package that speaks the line protocol
of tests/workers/README.md.

    bindings-python/.venv/bin/python tests/workers/worker.py URL [WATCHDOG_MS]
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time

try:
    import ferrolock
except ImportError as exc:
    print(f"ferrolock worker (python): cannot import ferrolock ({exc}); run: bash scripts/build.sh", file=sys.stderr)
    sys.exit(127)

NUMBER = re.compile(r"[0-9]{1,15}")
COUNTER = re.compile(r"-?[0-9]{1,18}")

# DESIGN §4: exception class -> error code. Anything else is ERR_INTERNAL.
CODES: list[tuple[type[BaseException], str]] = [
    (ferrolock.NotOwnedError, "ERR_NOT_OWNER"),
    (ferrolock.LockLostError, "ERR_LOCK_LOST"),
    (ferrolock.ConnectionError, "ERR_CONNECTION"),
    (ferrolock.WrongTypeError, "ERR_WRONG_TYPE"),
    (ferrolock.InvalidArgumentError, "ERR_INVALID_ARGUMENT"),
]


class Failure(Exception):
    """An ``err CODE MESSAGE`` reply decided by the worker itself."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def invalid(message: str) -> Failure:
    return Failure("ERR_INVALID_ARGUMENT", message)


def coded(e: BaseException) -> str:
    """``CODE MESSAGE`` of an exception, on one line."""
    code = e.code if isinstance(e, Failure) else next((c for cls, c in CODES if isinstance(e, cls)), "ERR_INTERNAL")
    return f"{code} {str(e).replace(chr(13), ' ').replace(chr(10), ' ')}"


def say(line: str) -> None:
    try:
        sys.stdout.buffer.write(line.encode("utf-8", "replace") + b"\n")
        sys.stdout.buffer.flush()
    except OSError:
        pass


def number(field: str, what: str) -> int:
    if not NUMBER.fullmatch(field):
        raise invalid(f"{what} must be a non-negative integer, not {json.dumps(field)}")
    return int(field)


class Entry:
    """The one lock handle (one holder: this object, the main thread) kept per name."""

    def __init__(self, client: ferrolock.Client, name: str, fenced: bool) -> None:
        self.lost_event = threading.Event()
        make = client.fenced_lock if fenced else client.lock
        self.lock = make(name, on_lost=lambda _lock: self.lost_event.set())
        # Levels acquired and not yet released (a lost hold counts until it is released).
        self.depth = 0


def acquire(entry: Entry, wait_ms: int | None) -> str | None:
    """Acquires one level: the token (``-`` for a plain lock), or None when not acquired in time."""
    depth = 0 if entry.lock.lost else entry.depth  # a lost hold is over: this starts a new one
    if not entry.lock.acquire(True, None if wait_ms is None else wait_ms / 1000):
        return None
    entry.depth = depth + 1
    token = entry.lock.token
    return "-" if token is None else str(token)


def release(entry: Entry) -> None:
    try:
        entry.lock.release()
    except ferrolock.NotOwnedError:
        entry.depth = 0
        raise
    except ferrolock.LockLostError:
        entry.depth = max(0, entry.depth - 1)
        raise
    entry.depth = max(0, entry.depth - 1)


def bump_counter(path: str) -> None:
    """The deliberately non-atomic counter update: read, then truncate and write."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8").strip()
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as e:
        raise invalid(f"file {json.dumps(path)}: {e}") from None
    if text and not COUNTER.fullmatch(text):
        raise invalid(f"counter file {json.dumps(path)} does not hold an integer")
    try:
        with open(path, "w") as f:
            f.write(str(int(text or "0") + 1))
    except OSError as e:
        raise invalid(f"file {json.dumps(path)}: {e}") from None


def count(entry: Entry, counter: str, log: str, most: int, seconds: int, hold_us: int) -> int:
    try:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    except OSError as e:
        raise invalid(f"file {json.dumps(log)}: {e}") from None
    try:
        start = time.monotonic_ns()
        done = 0
        while (most == 0 or done < most) and (seconds == 0 or time.monotonic_ns() - start < seconds * 10**9):
            t0 = time.monotonic_ns()
            token = acquire(entry, None)
            t1 = time.monotonic_ns()
            try:
                bump_counter(counter)
            finally:
                time.sleep(hold_us / 1e6)
                t2 = time.monotonic_ns()
                release(entry)
            try:
                os.write(fd, f"{token} {t0} {t1} {t2}\n".encode())
            except OSError as e:
                raise invalid(f"file {json.dumps(log)}: {e}") from None
            done += 1
        return done
    finally:
        os.close(fd)


class Worker:
    def __init__(self, client: ferrolock.Client) -> None:
        self.client = client
        self.locks: dict[str, Entry] = {}

    def entry(self, name: str, fenced: bool) -> Entry:
        """The handle for ``name``, created on first use (fenced or plain)."""
        entry = self.locks.get(name)
        if entry is None:
            entry = self.locks[name] = Entry(self.client, name, fenced)
        return entry

    def run(self, line: str) -> str:
        command, *args = line.split(" ")
        if command == "acquire" and len(args) in (2, 3) and args[1] in ("plain", "fenced"):
            wait = number(args[2], "WAIT_MS") if len(args) == 3 else None
            token = acquire(self.entry(args[0], args[1] == "fenced"), wait)
            return "timeout" if token is None else f"ok {token}"
        if command == "release" and len(args) == 1:
            release(self.entry(args[0], False))
            return "ok"
        if command == "force_unlock" and len(args) == 1:
            return "ok true" if self.entry(args[0], False).lock.force_unlock() else "ok false"
        if command == "lost" and len(args) == 1:
            entry = self.entry(args[0], False)
            if entry.depth == 0:
                raise Failure("ERR_NOT_OWNER", f"lock {json.dumps(args[0])} is not held by this worker")
            while not entry.lock.lost:
                entry.lost_event.wait()
                entry.lost_event.clear()
            return "lost"
        if command == "count" and len(args) == 6:
            name, counter, log = args[:3]
            most, seconds = number(args[3], "MAX"), number(args[4], "SECONDS")
            hold_us = number(args[5], "HOLD_US")
            return f"ok {count(self.entry(name, True), counter, log, most, seconds, hold_us)}"
        raise invalid(f"malformed command {json.dumps(line)}; see tests/workers/README.md")


def main(argv: list[str]) -> int:
    try:
        if len(argv) not in (2, 3):
            raise invalid("usage: worker.py URL [WATCHDOG_MS]")
        watchdog_ms = number(argv[2], "WATCHDOG_MS") if len(argv) == 3 else 30000
        client = ferrolock.Client(argv[1], watchdog_timeout=watchdog_ms / 1000)
    except Exception as e:
        say(f"fail {coded(e)}")
        return 1
    say(f"ready python {os.getpid()}")

    worker = Worker(client)
    for raw in iter(sys.stdin.buffer.readline, b""):
        try:
            line = raw.removesuffix(b"\n").decode("utf-8")
            if "\0" in line:
                raise UnicodeError("NUL")
        except UnicodeError:
            say("err ERR_INVALID_ARGUMENT the command is not valid UTF-8 text")
            continue
        if line == "quit":
            break
        try:
            reply = worker.run(line)
        except Exception as e:
            reply = f"err {coded(e)}"
        say(reply)
    # Closing the client releases whatever this worker still holds.
    try:
        client.close()
    except ferrolock.LockError:
        pass
    say("bye")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
