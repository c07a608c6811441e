"""Test helpers: redis-server processes started (and killed) by the tests themselves."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import IO

import redis

REDIS_SERVER = shutil.which("redis-server") or "redis-server"


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0, what: str = "condition") -> None:
    """Polls ``predicate`` until it holds; fails the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.005)


def interrupt_when(ready: Callable[[], bool], call: Callable[[], object], what: str) -> tuple[float, float]:
    """Runs ``call`` on this (the main) thread and sends this process SIGINT (Ctrl-C)
    once ``ready`` holds; ``call`` must end with KeyboardInterrupt. Gives when the
    signal was sent and when the call ended (time.monotonic)."""
    sent_at: list[float] = []

    def interrupt() -> None:
        wait_until(ready, what=what)
        sent_at.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        t = threading.Thread(target=interrupt)
        t.start()
        try:
            call()
        except KeyboardInterrupt:
            ended_at = time.monotonic()
        else:
            raise AssertionError("the call was not interrupted")
        t.join(10)
    finally:
        signal.signal(signal.SIGINT, previous)
    return sent_at[0], ended_at


@contextlib.contextmanager
def kept_in_thread(take: Callable[[], object], name: str) -> Iterator[None]:
    """Runs ``take`` (an acquire, say) in a new thread named ``name``, which then
    stays alive, keeping what it took, until the ``with`` block ends; the block
    starts once ``take`` returned. What ``take`` raises fails the test there."""
    ready, finish = threading.Event(), threading.Event()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            take()
        except BaseException as e:
            failed.append(e)
        ready.set()
        if not failed:
            finish.wait(30)

    thread = threading.Thread(target=run, name=name)
    thread.start()
    try:
        assert ready.wait(10), f"thread {name!r} did not finish taking"
        if failed:
            raise failed[0]
        yield
    finally:
        finish.set()
        thread.join(10)


async def eventually(predicate: Callable[[], Awaitable[bool]], timeout: float = 5.0, what: str = "condition") -> None:
    """Polls an async predicate until it holds; fails after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not await predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.005)


class RedisServer:
    """A redis-server process on a free loopback port in a temporary directory.
    ``extra_args`` are appended to its command line (``--replicaof ...``)."""

    def __init__(self, password: str | None = None, extra_args: list[str] | None = None) -> None:
        self.password = password
        self.extra_args = list(extra_args or [])
        self.port = 0
        self.dir = tempfile.mkdtemp(prefix="ferrolock-py-redis-")
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        for _attempt in range(5):
            self.port = free_port()
            args = self._command(self.port)
            self._log = open(os.path.join(self.dir, "redis.log"), "ab")
            self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT)
            if self._wait_ready():
                return self
            self._kill()
        raise RuntimeError(f"redis-server did not start; see {self.dir}/redis.log")

    def _command(self, port: int) -> list[str]:
        """The command line of the server on ``port``."""
        args = [
            REDIS_SERVER,
            "--port", str(port),
            "--bind", "127.0.0.1",
            "--dir", self.dir,
            "--save", "",
            "--appendonly", "no",
            "--daemonize", "no",
        ]
        if self.password:
            args += ["--requirepass", self.password]
        return args + self.extra_args

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                return False
            try:
                if self.redis().ping():
                    return True
            except redis.exceptions.ConnectionError:
                time.sleep(0.02)
            except redis.exceptions.AuthenticationError:
                return True
        return False

    @property
    def pid(self) -> int:
        assert self.proc is not None, "the server is not running"
        return self.proc.pid

    def redis(self) -> redis.Redis:
        """A redis-py client for inspecting and preparing the server."""
        return redis.Redis(host="127.0.0.1", port=self.port, password=self.password, socket_timeout=5)

    def _kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def stop(self) -> None:
        self._kill()
        shutil.rmtree(self.dir, ignore_errors=True)


class SentinelServer(RedisServer):
    """A redis-server in sentinel mode (``redis-server <conf> --sentinel``) that
    monitors the master at ``master_port`` as ``master_name`` (quorum 2, down after
    1 s). Sentinel rewrites its config file, so it lives in the temporary directory."""

    def __init__(self, master_name: str, master_port: int) -> None:
        super().__init__()
        self.master_name = master_name
        self.master_port = master_port

    def _command(self, port: int) -> list[str]:
        conf = os.path.join(self.dir, "sentinel.conf")
        with open(conf, "w") as f:
            f.write(
                f"port {port}\n"
                "bind 127.0.0.1\n"
                f"dir {self.dir}\n"
                f"sentinel monitor {self.master_name} 127.0.0.1 {self.master_port} 2\n"
                f"sentinel down-after-milliseconds {self.master_name} 1000\n"
            )
        return [REDIS_SERVER, conf, "--sentinel"]


class FaultProxy:
    """tests/harness's ``fault-proxy`` program in front of ``127.0.0.1:upstream_port``
    (its path in FERROLOCK_FAULT_PROXY, else target/debug/fault-proxy of the
    repository: ``cargo build -p ferrolock-harness --bin fault-proxy``). ``send(line)``
    returns once the fault is in force (commands: tests/harness/README.md)."""

    def __init__(self, upstream_port: int) -> None:
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
        binary = os.environ.get("FERROLOCK_FAULT_PROXY") or os.path.join(root, "target", "debug", "fault-proxy")
        if not os.path.exists(binary):
            raise RuntimeError(f"no fault-proxy at {binary}: cargo build -p ferrolock-harness --bin fault-proxy")
        self._proc = subprocess.Popen(
            [binary, str(upstream_port)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        self._lock = threading.Lock()
        first = self._read()
        if not first.startswith("port "):
            raise RuntimeError(f"fault-proxy said {first!r}")
        self.port = int(first.split()[1])
        self.url = f"redis://127.0.0.1:{self.port}"

    def _read(self) -> str:
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError("fault-proxy exited")
        return line.strip()

    def send(self, line: str) -> str:
        """Sends one command; returns the answer (``ok`` or ``ok N``), raises on ``error``."""
        assert self._proc.stdin is not None
        with self._lock:
            self._proc.stdin.write(line + "\n")
            self._proc.stdin.flush()
            answer = self._read()
        if not answer.startswith("ok"):
            raise RuntimeError(f"fault-proxy: {line}: {answer}")
        return answer

    def stop(self) -> None:
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            self._proc.wait(10)
        if self._proc.stdout is not None:
            self._proc.stdout.close()
