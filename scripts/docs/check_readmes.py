"""Checks the READMEs that ship inside the release artifacts: they are read by people
who installed a package, so none may tell them to build from a checkout.

    python3 scripts/docs/check_readmes.py

The packaged READMEs: bindings-python/README.md (the wheel's and sdist's description
on PyPI, pyproject.toml's `readme`), bindings-node/README.md (the npm package),
bindings-node/npm/linux-x64-gnu/README.md (its platform package), bindings-c/README.md
(the C tarball and the .deb, scripts/package/c.sh) and cli/README.md (the CLI tarball,
scripts/package/cli.sh). Building from a clone, the tests and the layout live in each
binding's DEVELOPING.md, which no artifact carries. A line fails when it names a build
or test step of the repository, or links outside it (an `.invalid` host in example
code aside)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGED = [
    "bindings-python/README.md",
    "bindings-node/README.md",
    "bindings-node/npm/linux-x64-gnu/README.md",
    "bindings-c/README.md",
    "cli/README.md",
]
FORBIDDEN = re.compile(
    r"cargo (build|install|run|test)|make -C|npm run |\bscripts/|build\.sh|test\.sh|"
    r"pip install (\./|-e)|maturin (develop|build)|git clone|from a (clone|checkout)|"
    r"https?://(?![a-z0-9.-]*\.invalid\b)",
    re.I,
)


def main() -> int:
    problems = []
    for name in PACKAGED:
        for n, line in enumerate((ROOT / name).read_text().splitlines(), 1):
            m = FORBIDDEN.search(line)
            if m:
                problems.append(f"{name}:{n}: {m.group(0)!r} in a packaged README: {line.strip()}")
    for p in problems:
        print(f"check_readmes: {p}", file=sys.stderr)
    if problems:
        print("check_readmes: move build-from-source and test steps to the binding's DEVELOPING.md", file=sys.stderr)
        return 1
    print(f"packaged READMEs ({len(PACKAGED)}): no build-from-source step, no link outside")
    return 0


if __name__ == "__main__":
    sys.exit(main())
