"""The migration pages' tables, checked row by row (docs/site/migration/*.md).

Every table row of a migration page ends with ``<!-- row: PAGE/ID -->``; a test here
runs the peer library's call and ferrolock's mapped call on the same scenario
against a real redis-server and names the rows it backs with
``@pytest.mark.row("PAGE/ID", ...)``. When this directory runs whole, the session
fails unless every row of the pages below passed in it and every named row exists
(scripts/docs/check_rows.py checks the same statically for every page, in the docs
build). The peers' versions are pinned in bindings-python/requirements-dev.txt.

The peers run on a redis-server of their own (the ``url`` fixture below), so
their keys never meet the leak check of the binding's suite."""

from __future__ import annotations

import re
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
import redis

from helpers import RedisServer

PAGES = Path(__file__).resolve().parents[3] / "docs" / "site" / "migration"
CHECKED = ("redis-py", "python-redis-lock", "pottery")
"""The pages whose rows this directory backs."""

ROW = re.compile(r"<!-- row: ([a-z0-9-]+/[a-z0-9-]+) -->")


def page_rows(page: str) -> list[str]:
    """The row ids of docs/site/migration/PAGE.md, in order."""
    return ROW.findall((PAGES / f"{page}.md").read_text())


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "row(*ids): the migration-page rows this test backs")
    config.stash[_PASSED] = set()
    config.stash[_NAMED] = {}


_PASSED = pytest.StashKey[set[str]]()
_NAMED = pytest.StashKey[dict[str, list[str]]]()
_WHOLE = pytest.StashKey[bool]()


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    mine = [i for i in items if Path(str(i.path)).parent == here]
    named = config.stash[_NAMED]
    for item in mine:
        ids = [i for m in item.iter_markers("row") for i in m.args]
        assert ids, f"{item.nodeid} names no migration row (@pytest.mark.row)"
        named[item.nodeid] = ids
    # The check below needs every test of this directory: not with -k, -m or a node id.
    files = {p.name for p in here.glob("test_*.py")}
    config.stash[_WHOLE] = bool(mine) and {Path(str(i.path)).name for i in mine} == files and not (
        config.getoption("keyword") or config.getoption("markexpr")
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call" and report.passed:
        item.config.stash[_PASSED].update(item.config.stash[_NAMED].get(item.nodeid, []))
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if not config.stash.get(_WHOLE, False):
        return
    rows = {r for page in CHECKED for r in page_rows(page)}
    named = {r for ids in config.stash[_NAMED].values() for r in ids}
    unknown = sorted(named - rows)
    passed: set[str] = config.stash[_PASSED]
    unbacked = sorted(rows - passed)
    problems = []
    if unknown:
        problems.append(f"tests name rows that no page has: {', '.join(unknown)}")
    if unbacked:
        problems.append(f"rows without a passing test: {', '.join(unbacked)}")
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if problems:
        for p in problems:
            if reporter is not None:
                reporter.write_line(f"migration pages: {p}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    elif reporter is not None:
        reporter.write_line(f"migration pages: all {len(rows)} rows of {', '.join(CHECKED)} backed by a passing test")


@pytest.fixture(scope="session")
def peer_server() -> Iterator[RedisServer]:
    srv = RedisServer().start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def url(peer_server: RedisServer) -> str:
    return peer_server.url


@pytest.fixture
def r(peer_server: RedisServer) -> Iterator[redis.Redis]:
    """A redis-py client on the peers' server (the peers' connection)."""
    client = peer_server.redis()
    yield client
    client.close()
