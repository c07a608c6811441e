"""The Python worker of the cross-language tests and of ``ferrolock demo``: a thin
user of the sync API of the ``ferrolock`` package that speaks the line protocol
of tests/workers/README.md.

    bindings-python/.venv/bin/python tests/workers/worker.py URL [WATCHDOG_MS]

Start-up settings from the environment (all optional): FERROLOCK_WORKER_APP
(``app_name``), FERROLOCK_WORKER_NOTE_AFTER_MS (``holder_note_after``),
FERROLOCK_WORKER_SLOW_WAIT_MS (``slow_wait_log``).
"""

from __future__ import annotations

import json
import logging
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


KINDS = ("plain", "fenced", "fair", "read", "write")


def kind_of(field: str) -> str:
    if field not in KINDS:
        raise invalid(f"unknown lock kind {json.dumps(field)}; give plain, fenced, fair, read or write")
    return field


class Entry:
    """The one lock handle (one holder: this object, the main thread) kept per (name, kind)."""

    def __init__(self, lock: ferrolock.Lock) -> None:
        self.lock = lock
        # Levels acquired and not yet released (a lost hold counts until it is released).
        self.depth = 0
        # Who held the lock when this worker's latest timed-out acquire of it gave up.
        self.seen: ferrolock.HolderEntry | None = None


def acquire(entry: Entry, wait_ms: int | None) -> str | None:
    """Acquires one level: the token (``-`` for a plain lock), or None when not acquired in time."""
    depth = 0 if entry.lock.lost else entry.depth  # a lost hold is over: this starts a new one
    if not entry.lock.acquire(True, None if wait_ms is None else wait_ms / 1000):
        return None
    entry.depth = depth + 1
    token = entry.lock.token
    return "-" if token is None else str(token)


def acquire_or_timeout(entry: Entry, wait_ms: int | None) -> str | None:
    """As :func:`acquire`, through the path that raises LockTimeoutError (and carries
    the holder): ``hold()``, re-entered inside so that one level stays held after it."""
    depth = 0 if entry.lock.lost else entry.depth
    try:
        with entry.lock.hold(timeout=None if wait_ms is None else wait_ms / 1000):
            entry.lock.acquire()  # a re-entry: at once
    except ferrolock.LockTimeoutError as e:
        entry.seen = e.holder
        return None
    entry.depth = depth + 1
    token = entry.lock.token
    return "-" if token is None else str(token)


class WaitLog(logging.Handler):
    """Keeps, per lock name, the latest INFO line of the core's slow-wait log
    (``waiting 10 s for lock "NAME": held by ...``), as Python's logging gets it."""

    PATTERN = re.compile(r'waiting .*? for lock "([^"]*)"')

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.latest: dict[str, str] = {}
        self.mutex = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        found = self.PATTERN.match(message)
        if record.levelno == logging.INFO and found:
            with self.mutex:
                self.latest[found.group(1)] = message.replace("\r", " ").replace("\n", " ")

    def line(self, name: str) -> str | None:
        with self.mutex:
            return self.latest.get(name)


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


class Section:
    """What one ``count`` section holds: a lock level, or one permit of a semaphore."""

    def __init__(self, entry: Entry | None = None, semaphore: ferrolock.Semaphore | None = None) -> None:
        self.entry = entry
        self.semaphore = semaphore

    def take(self) -> str:
        """Takes it, waiting as long as it takes; the token to log (0 without one)."""
        if self.semaphore is not None:
            self.semaphore.acquire()
            return "0"
        assert self.entry is not None
        token = acquire(self.entry, None)
        return "0" if token in (None, "-") else str(token)

    def give_back(self) -> None:
        if self.semaphore is not None:
            self.semaphore.release()
        else:
            assert self.entry is not None
            release(self.entry)


def count(section: Section, counter: str, log: str, most: int, seconds: int, hold_us: int) -> int:
    try:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    except OSError as e:
        raise invalid(f"file {json.dumps(log)}: {e}") from None
    try:
        start = time.monotonic_ns()
        done = 0
        while (most == 0 or done < most) and (seconds == 0 or time.monotonic_ns() - start < seconds * 10**9):
            t0 = time.monotonic_ns()
            token = section.take()
            t1 = time.monotonic_ns()
            try:
                bump_counter(counter)
            finally:
                time.sleep(hold_us / 1e6)
                t2 = time.monotonic_ns()
                section.give_back()
            try:
                os.write(fd, f"{token} {t0} {t1} {t2}\n".encode())
            except OSError as e:
                raise invalid(f"file {json.dumps(log)}: {e}") from None
            done += 1
        return done
    finally:
        os.close(fd)


def elect(client: ferrolock.Client, name: str, port: int, sha: str, who: str, resign_ms: int) -> None:
    """``elect``: a candidate that campaigns, writes to the outside fence with its term
    while it leads (every 20 ms), and resigns after ``resign_ms`` (0: leads until it is
    killed or loses), campaigning again each time; in a thread of its own."""
    import redis  # the test tools of bindings-python/.venv (pyproject's test extra)

    election = client.election(name)
    fence = redis.Redis(port=port)

    def write(op: str, term: int) -> None:
        fence.evalsha(sha, 3, "fence", "fence:dead", "fence:events", op, term, who)

    def run() -> None:
        while True:
            try:
                leadership = election.campaign()
            except ferrolock.LockError:
                time.sleep(0.05)
                continue
            write("enter", leadership.term)
            resign_at = time.monotonic() + resign_ms / 1000 if resign_ms else None
            while True:
                if leadership.lost_event.wait(0.02):
                    write("leave", leadership.term)
                    break
                write("write", leadership.term)
                if resign_at is not None and time.monotonic() >= resign_at:
                    write("leave", leadership.term)
                    leadership.resign()
                    break

    threading.Thread(target=run, name=f"candidate {who}", daemon=True).start()


def wait_ms(field: str | None) -> float | None:
    """WAIT_MS (or LEASE_MS) in seconds; None (as long as it takes) when absent or ``-``."""
    return None if field is None or field == "-" else number(field, "WAIT_MS") / 1000


class Worker:
    def __init__(self, client: ferrolock.Client, waitlog: WaitLog) -> None:
        self.client = client
        self.waitlog = waitlog
        self.labels: dict[str, str] = {}
        """``label NAME TEXT``: the thread name to acquire NAME under (notes name the thread)."""
        self.thread_name = threading.current_thread().name
        self.locks: dict[tuple[str, str], Entry] = {}
        self.first_kind: dict[str, str] = {}
        """The kind each name was first used with: ``release NAME`` / ``lost NAME`` without a KIND."""
        self.semaphores: dict[str, ferrolock.Semaphore] = {}
        self.permits: dict[str, ferrolock.PermitExpirableSemaphore] = {}
        self.latches: dict[str, ferrolock.CountDownLatch] = {}
        self.lost_signal = threading.Condition()
        """Notified by every lock's on_lost (a background thread); ``lost`` waits on it."""

    def on_lost(self, _lock: ferrolock.Lock) -> None:
        with self.lost_signal:
            self.lost_signal.notify_all()

    def entry(self, name: str, kind: str) -> Entry:
        """The handle for (``name``, ``kind``), created on first use; both sides of a
        read-write lock are made together (one holder)."""
        entry = self.locks.get((name, kind))
        if entry is None:
            if kind in ("read", "write"):
                rw = self.client.read_write_lock(name, on_lost=self.on_lost)
                self.locks[(name, "read")] = Entry(rw.read_lock())
                self.locks[(name, "write")] = Entry(rw.write_lock())
            else:
                make = {"plain": self.client.lock, "fenced": self.client.fenced_lock, "fair": self.client.fair_lock}
                self.locks[(name, kind)] = Entry(make[kind](name, on_lost=self.on_lost))
            entry = self.locks[(name, kind)]
        self.first_kind.setdefault(name, kind)
        return entry

    def named(self, name: str, kind: str | None) -> Entry:
        """The handle a command with an optional KIND means (without: the first kind used)."""
        return self.entry(name, kind_of(kind) if kind is not None else self.first_kind.get(name, "plain"))

    def semaphore(self, name: str) -> ferrolock.Semaphore:
        if name not in self.semaphores:
            self.semaphores[name] = self.client.semaphore(name)
        return self.semaphores[name]

    def permit_semaphore(self, name: str) -> ferrolock.PermitExpirableSemaphore:
        if name not in self.permits:
            self.permits[name] = self.client.permit_expirable_semaphore(name)
        return self.permits[name]

    def latch(self, name: str) -> ferrolock.CountDownLatch:
        if name not in self.latches:
            self.latches[name] = self.client.count_down_latch(name)
        return self.latches[name]

    def run(self, line: str) -> str:
        command, *args = line.split(" ")
        n = len(args)
        if command == "acquire" and n in (2, 3):
            entry = self.entry(args[0], kind_of(args[1]))
            self.name_thread(args[0])
            token = acquire_or_timeout(entry, number(args[2], "WAIT_MS") if n == 3 else None)
            return "timeout" if token is None else f"ok {token}"
        if command == "label" and n >= 2:
            # The thread that runs the commands takes TEXT as its name when it acquires
            # NAME: the binding's automatic label (the thread name) is what is tested.
            self.labels[args[0]] = " ".join(args[1:])
            return "ok"
        if command == "holder" and n == 1:
            seen = self.named(args[0], None).seen
            return "ok -" if seen is None else f"ok {one_line(seen.description)}"
        if command == "elect" and n == 5:
            elect(self.client, args[0], number(args[1], "FENCE_PORT"), args[2], args[3], number(args[4], "RESIGN_MS"))
            return "ok"
        if command == "waitlog" and n == 1:
            logged = self.waitlog.line(args[0])
            return "ok -" if logged is None else f"ok {one_line(logged)}"
        if command == "release" and n in (1, 2):
            release(self.named(args[0], args[1] if n == 2 else None))
            return "ok"
        if command == "force_unlock" and n == 1:
            return "ok true" if self.named(args[0], None).lock.force_unlock() else "ok false"
        if command == "lost" and n in (1, 2):
            entry = self.named(args[0], args[1] if n == 2 else None)
            if entry.depth == 0:
                raise Failure("ERR_NOT_OWNER", f"lock {json.dumps(args[0])} is not held by this worker")
            with self.lost_signal:
                self.lost_signal.wait_for(lambda: entry.lock.lost)
            return "lost"
        if command == "count" and n in (6, 7):
            name, counter, log = args[:3]
            most, seconds = number(args[3], "MAX"), number(args[4], "SECONDS")
            hold_us = number(args[5], "HOLD_US")
            kind = args[6] if n == 7 else "fenced"
            if kind.startswith("sem:"):
                semaphore = self.semaphore(name)
                semaphore.try_set_permits(number(kind[4:], "the permits of KIND sem:P"))
                section = Section(semaphore=semaphore)
            else:
                section = Section(entry=self.entry(name, kind_of(kind)))
                self.name_thread(name)
            return f"ok {count(section, counter, log, most, seconds, hold_us)}"
        if command == "sem_set" and n == 2:
            return f"ok {str(self.semaphore(args[0]).try_set_permits(number(args[1], 'PERMITS'))).lower()}"
        if command == "sem_acquire" and n in (2, 3):
            permits = number(args[1], "PERMITS")
            wait = number(args[2], "WAIT_MS") / 1000 if n == 3 else None
            return "ok" if self.semaphore(args[0]).acquire(timeout=wait, permits=permits) else "timeout"
        if command == "sem_release" and n == 2:
            return f"ok {self.semaphore(args[0]).release(number(args[1], 'PERMITS'))}"
        if command == "sem_available" and n == 1:
            return f"ok {self.semaphore(args[0]).available()}"
        if command == "permit_acquire" and 1 <= n <= 3:
            wait = wait_ms(args[1] if n >= 2 else None)
            lease = number(args[2], "LEASE_MS") / 1000 if n == 3 else None
            # The permit outlives this command: the test releases it by id.
            permit = self.permit_semaphore(args[0]).acquire(wait, lease=lease)
            return "timeout" if permit is None else f"ok {permit.id}"
        if command == "permit_release" and n == 2:
            return f"ok {str(self.permit_semaphore(args[0]).release(args[1])).lower()}"
        if command == "permit_set" and n == 2:
            return f"ok {str(self.permit_semaphore(args[0]).try_set_permits(number(args[1], 'PERMITS'))).lower()}"
        if command == "latch_set" and n == 2:
            return f"ok {str(self.latch(args[0]).try_set_count(number(args[1], 'COUNT'))).lower()}"
        if command == "latch_down" and n == 1:
            return f"ok {self.latch(args[0]).count_down()}"
        if command == "latch_count" and n == 1:
            return f"ok {self.latch(args[0]).count()}"
        if command == "latch_wait" and n in (1, 2):
            wait = number(args[1], "WAIT_MS") / 1000 if n == 2 else None
            return "ok open" if self.latch(args[0]).wait(wait) else "timeout"
        raise invalid(f"malformed command {json.dumps(line)}; see tests/workers/README.md")

    def name_thread(self, name: str) -> None:
        """Names the command thread for an acquire of ``name`` (its label, else its first name)."""
        threading.current_thread().name = self.labels.get(name, self.thread_name)


def one_line(text: str) -> str:
    return text.replace("\r", " ").replace("\n", " ")


def main(argv: list[str]) -> int:
    try:
        if len(argv) not in (2, 3):
            raise invalid("usage: worker.py URL [WATCHDOG_MS]")
        watchdog_ms = number(argv[2], "WATCHDOG_MS") if len(argv) == 3 else 30000
        settings: dict[str, object] = {}
        if os.environ.get("FERROLOCK_WORKER_APP"):
            settings["app_name"] = os.environ["FERROLOCK_WORKER_APP"]
        for env, setting in (("FERROLOCK_WORKER_NOTE_AFTER_MS", "holder_note_after"),
                             ("FERROLOCK_WORKER_SLOW_WAIT_MS", "slow_wait_log")):
            if os.environ.get(env):
                settings[setting] = number(os.environ[env], env) / 1000
        # The slow-wait lines reach logging at INFO: the level of "ferrolock" is read when connecting.
        waitlog = WaitLog()
        logger = logging.getLogger("ferrolock")
        logger.addHandler(waitlog)
        logger.setLevel(logging.INFO)
        # Warnings (a lost hold, ...) on stderr, as without a handler; stdout is the protocol.
        warnings = logging.StreamHandler(sys.stderr)
        warnings.setLevel(logging.WARNING)
        logger.addHandler(warnings)
        client = ferrolock.Client(argv[1], watchdog_timeout=watchdog_ms / 1000, **settings)  # type: ignore[arg-type]
    except Exception as e:
        say(f"fail {coded(e)}")
        return 1
    say(f"ready python {os.getpid()}")

    worker = Worker(client, waitlog)
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
