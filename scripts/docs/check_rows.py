"""Checks that the migration pages' tables cannot drift from the tests behind them.

    python3 scripts/docs/check_rows.py

Every table row of docs/site/migration/<page>.md (index.md aside) must end with
``<!-- row: <page>/<id> -->``, ids unique; every such row must be named by a test in
the peer suites below, and every row a test names must be on its page. How a test
names a row: Python ``@pytest.mark.row("<page>/<id>", ...)``, Node
``row('<page>/<id>' | [...], title, fn)``, Rust a ``// row: <page>/<id>`` line above
the test.

A page whose first lines carry ``<!-- rows: names only -->`` is exempt: it maps another
tool's API names, as that tool's documentation gives them, to ferrolock's, and states
only ferrolock's behaviour (checked by the tests its guides name); no suite here runs
that tool (etcd, Curator, consul and ShedLock are not installed by the test command).

This is the static half. The suites check the other half when they run: pytest's
bindings-python/tests/migration/conftest.py and Node's test/migration/rows.js fail
unless every row of their pages passed in that run; tests/migration_flock.rs checks
its page the same way as here. Each suite runs in the test command, and a failing
or skipped test fails it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / "docs" / "site" / "migration"
SUITES = [
    "bindings-python/tests/migration/test_*.py",
    "bindings-node/test/migration/*.test.js",
    "tests/migration_flock.rs",
    "tests/redisson/*.rs",
]
NAMES_ONLY = "<!-- rows: names only -->"
MARKER = re.compile(r"<!-- row: ([a-z0-9-]+)/([a-z0-9-]+) -->")


def page_rows(problems: list[str]) -> dict[str, str]:
    """Row id -> page, checking every table row of every page (a table's header is
    the line above its |---| line)."""
    rows: dict[str, str] = {}
    for page in sorted(PAGES.glob("*.md")):
        if page.name == "index.md":
            continue
        lines = page.read_text().splitlines()
        if NAMES_ONLY in lines[:5]:
            continue
        for n, line in enumerate(lines, 1):
            separator = lambda text: text.startswith("|") and set(text) <= set("|-: ")  # noqa: E731
            if not line.startswith("|") or separator(line) or (n < len(lines) and separator(lines[n])):
                continue
            found = MARKER.findall(line)
            where = f"{page.relative_to(ROOT)}:{n}"
            if len(found) != 1:
                problems.append(f"{where}: a table row needs one <!-- row: {page.stem}/ID --> (found {len(found)})")
                continue
            prefix, ident = found[0]
            if prefix != page.stem:
                problems.append(f"{where}: row {prefix}/{ident} belongs on {prefix}.md")
            full = f"{prefix}/{ident}"
            if full in rows:
                problems.append(f"{where}: row {full} appears twice")
            rows[full] = page.name
    return rows


def named_rows(pages: set[str]) -> dict[str, list[str]]:
    """Row id -> the test files naming it."""
    quoted = re.compile(r"""["']((?:%s)/[a-z0-9-]+)["']""" % "|".join(map(re.escape, sorted(pages))))
    comment = re.compile(r"^\s*// row: (\S+)\s*$", re.M)
    named: dict[str, list[str]] = {}
    for pattern in SUITES:
        for path in sorted(ROOT.glob(pattern)):
            text = path.read_text()
            ids = set(comment.findall(text))
            if path.suffix in (".py", ".js"):
                ids |= set(quoted.findall(text))
            for i in ids:
                named.setdefault(i, []).append(str(path.relative_to(ROOT)))
    return named


def main() -> int:
    problems: list[str] = []
    rows = page_rows(problems)
    pages = {p.stem for p in PAGES.glob("*.md")} - {"index"}
    named = named_rows(pages)
    for row, page in sorted(rows.items()):
        if row not in named:
            problems.append(f"{page}: row {row} is named by no test ({', '.join(SUITES)})")
    for row, files in sorted(named.items()):
        if row not in rows:
            problems.append(f"{', '.join(files)}: names row {row}, which no page has")
    for p in problems:
        print(f"check_rows: {p}", file=sys.stderr)
    if problems:
        return 1
    by_page: dict[str, int] = {}
    for page in rows.values():
        by_page[page] = by_page.get(page, 0) + 1
    print("migration rows, each named by a test: " + ", ".join(f"{p} {n}" for p, n in sorted(by_page.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
