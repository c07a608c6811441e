"""A Python worker of the failover harness (tests/failover/README.md): one client of
the ``ferrolock`` package, one thread per resource, each running critical sections
that the outside observer records.

    bindings-python/.venv/bin/python tests/failover/worker.py CONFIG_JSON

Prints ``ready JSON`` once connected (or ``fail MESSAGE`` and exits 1), runs until
``stop`` or the end of stdin, then closes the client, prints ``done JSON`` and exits 0.
"""

from __future__ import annotations

import json
import os
import random
import socket
import sys
import threading
from typing import Any

try:
    import ferrolock
except ImportError as exc:
    print(f"fail cannot import ferrolock ({exc}); run: bash scripts/failover.sh (it builds it)", flush=True)
    sys.exit(1)


class Observer:
    """One connection to the observer: EVALSHA of its one script, nothing else."""

    def __init__(self, port: int, sha: str) -> None:
        self.sha = sha
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.file = self.sock.makefile("rb")
        self.mutex = threading.Lock()

    def call(self, resource: str, *argv: str) -> None:
        keys = [f"obs:res:{resource}", f"obs:in:{resource}", "obs:stats", "obs:olap", "obs:ev", "obs:secs", "obs:windows", "obs:log"]
        args = ["EVALSHA", self.sha, str(len(keys)), *keys, *argv]
        out = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a.encode()), a.encode()) for a in args)
        with self.mutex:
            self.sock.sendall(out)
            line = self.file.readline()
        if line.startswith(b"-"):
            raise RuntimeError(f"observer: {line.decode().strip()}")

    def enter(self, resource: str, allowed: int, token: str, sid: str) -> None:
        self.call(resource, "enter", str(allowed), token, sid)

    def exit(self, resource: str, sid: str) -> None:
        self.call(resource, "exit", "", "", sid)

    def lost(self, resource: str, sid: str) -> None:
        self.call(resource, "lost", "", "", sid)

    def error(self, kind: str) -> None:
        self.call("-", "err", kind)


def semaphore_name(base: str, epoch: int) -> str:
    """The semaphore of one epoch, in the cluster slot of ``base``."""
    return f"{{{base}}}.e{epoch}"


def code_of(e: BaseException) -> str:
    return str(getattr(e, "code", None) or type(e).__name__)


def connect(config: dict[str, Any]) -> tuple[ferrolock.Client, str]:
    """The client, with the replica-ack policy passed through as the binding's option
    takes it; before the named policies exist, ``off``/``one`` map onto the boolean."""
    options: dict[str, Any] = dict(config.get("python_options", {}))
    options["watchdog_timeout"] = config["watchdog_ms"] / 1000
    policy = config["policy"]
    if policy == "default":
        return ferrolock.Client(config["url"], **options), "default (no replica_ack given)"
    try:
        return ferrolock.Client(config["url"], replica_ack=policy, **options), f"replica_ack={policy!r}"
    except (TypeError, ferrolock.InvalidArgumentError) as e:
        legacy = {"off": False, "one": True, "on": True}.get(policy)
        if legacy is None:
            raise RuntimeError(f"the Python binding does not take replica_ack={policy!r}: {e}") from None
        return ferrolock.Client(config["url"], replica_ack=legacy, **options), f"replica_ack={legacy} (for {policy})"


class Worker:
    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.id = config["id"]
        self.stop = threading.Event()
        self.epoch = 0
        """Bumped by the harness after each fault: semaphore loops move to a fresh semaphore."""
        self.client: ferrolock.Client | None = None
        self.errors: dict[str, int] = {}
        self.messages: set[str] = set()
        self.sections = 0
        self.losses = 0
        self.mutex = threading.Lock()
        self.loss_observer = Observer(config["observer_port"], config["sha"])

    def count_error(self, observer: Observer, what: str, e: BaseException) -> None:
        kind = f"python:{what}:{code_of(e)}"
        with self.mutex:
            self.errors[kind] = self.errors.get(kind, 0) + 1
            message = f"{kind}: {e}"
            new = message not in self.messages and len(self.messages) < 50
            self.messages.add(message)
        if new:  # each distinct message once, for tracing
            print(f"failover worker {self.id}: {message}", file=sys.stderr, flush=True)
        observer.error(kind)

    def run(self, index: int, resource: dict[str, Any]) -> None:
        try:
            self.sections_of(index, resource)
        except BaseException as e:  # the observer failed, or the binding raised what it must not
            print(f"failover worker {self.id}: resource thread {index} ended: {e!r}", file=sys.stderr, flush=True)
            with self.mutex:
                self.errors[f"python:crash:{type(e).__name__}"] = self.errors.get(f"python:crash:{type(e).__name__}", 0) + 1

    def sections_of(self, index: int, resource: dict[str, Any]) -> None:
        name, kind, allowed = resource["name"], resource["kind"], int(resource["allowed"])
        observer = Observer(self.config["observer_port"], self.config["sha"])
        lost = threading.Event()
        current: list[str | None] = [None]

        def on_lost(_lock: Any, _reason: str) -> None:
            sid = current[0]
            if sid is not None:
                with self.mutex:
                    self.losses += 1
                self.loss_observer.lost(name, sid)
            lost.set()

        none = self.config["lock"] == "none"
        lock: Any = None
        semaphore: Any = None
        if not none:
            assert self.client is not None
            if kind == "fenced":
                lock = self.client.fenced_lock(name, on_lost=on_lost)
            elif kind == "fair":
                lock = self.client.fair_lock(name, on_lost=on_lost)
            elif kind == "write":
                lock = self.client.read_write_lock(name, on_lost=on_lost).write_lock()
            elif kind == "semaphore":
                semaphore = True  # made per epoch, below
            else:
                raise ValueError(f"unknown resource kind {kind}")
        wait = self.config["wait_ms"] / 1000
        low, high = self.config["hold_ms"]
        seq = 0
        epoch = -1
        while not self.stop.is_set():
            if kind == "semaphore" and epoch != self.epoch:
                # One semaphore per fault: permits a failover lost or doubled stay with its epoch.
                epoch = self.epoch
                name = semaphore_name(resource["name"], epoch)
                if not none:
                    semaphore = self.client.semaphore(name)
                    try:
                        semaphore.try_set_permits(allowed)
                    except ferrolock.LockError as e:
                        self.count_error(observer, "set_permits", e)
            seq += 1
            sid = f"{self.id}.{index}.{seq}"
            lost.clear()
            current[0] = sid
            token = ""
            try:
                if none:
                    token = str(seq) if kind == "fenced" else ""
                elif semaphore is not None:
                    if not semaphore.acquire(timeout=wait):
                        observer.error("python:acquire:timeout")
                        continue
                else:
                    if not lock.acquire(timeout=wait):
                        observer.error("python:acquire:timeout")
                        continue
                    if lock.token is not None:
                        token = str(lock.token)
            except ferrolock.LockError as e:
                self.count_error(observer, "acquire", e)
                self.stop.wait(0.05)  # pacing: an outage fails every acquire at once
                continue
            if lock is not None and lock.lost:
                self.release(observer, lock, semaphore)
                continue  # lost before its section began: "stop when lost" means not starting
            observer.enter(name, allowed, token, sid)
            with self.mutex:
                self.sections += 1
            lost.wait(random.uniform(low, high) / 1000)  # the work, ended early when lost
            observer.exit(name, sid)
            self.release(observer, lock, semaphore)
            current[0] = None  # a loss notice until the release names this section

    def release(self, observer: Observer, lock: Any, semaphore: Any) -> None:
        try:
            if semaphore is not None:
                semaphore.release()
            elif lock is not None:
                lock.release()
        except ferrolock.LockError as e:
            self.count_error(observer, "release", e)

    def loss_metric(self) -> dict[str, Any] | None:
        """The client's "noticed -> loss reported" histogram, when the binding has one."""
        if self.client is None:
            return None
        metrics = self.client.metrics()
        for field, value in vars(metrics).items():
            if any(w in field for w in ("notice", "loss_report", "lost_after")) and hasattr(value, "bounds"):
                return {"name": field, "bounds": list(value.bounds), "counts": list(value.counts), "count": value.count}
        return None


def main(argv: list[str]) -> int:
    config = json.loads(argv[1])
    worker = Worker(config)
    effective = "no lock"
    if config["lock"] != "none":
        try:
            worker.client, effective = connect(config)
        except Exception as e:  # the harness reports it as the mode's failure
            print(f"fail {code_of(e)} {str(e).replace(chr(10), ' ')}", flush=True)
            return 1
    threads = [threading.Thread(target=worker.run, args=(i, r), daemon=True) for i, r in enumerate(config["resources"])]
    for t in threads:
        t.start()
    print("ready " + json.dumps({"pid": os.getpid(), "policy": effective}), flush=True)
    for line in sys.stdin:
        if line.strip() == "stop":
            break
        if line.startswith("epoch "):
            worker.epoch = int(line.split()[1])
    worker.stop.set()
    for t in threads:
        t.join()
    metric = worker.loss_metric()
    if worker.client is not None:
        try:
            worker.client.close()
        except ferrolock.LockError as e:
            worker.errors[f"python:close:{code_of(e)}"] = worker.errors.get(f"python:close:{code_of(e)}", 0) + 1
    print("done " + json.dumps({"sections": worker.sections, "losses": worker.losses, "errors": worker.errors, "loss_metric": metric}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
