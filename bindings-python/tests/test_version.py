"""The package is the installed one, and it carries the workspace's one version."""

from __future__ import annotations

import importlib.metadata
import re
import sysconfig
from pathlib import Path

import ferrolock

REPO = Path(__file__).resolve().parents[2]


def workspace_version() -> str:
    text = (REPO / "Cargo.toml").read_text()
    section = text[text.index("[workspace.package]") :]
    match = re.search(r'^version = "([^"]+)"$', section, re.MULTILINE)
    assert match, "no version in [workspace.package]"
    return match.group(1)


def test_the_tests_run_against_an_installed_package() -> None:
    # Never the source tree: the wheel (or build.sh's install) in this interpreter's site-packages.
    installed = Path(ferrolock.__file__).resolve()
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    assert installed.is_relative_to(site), f"{installed} is not under {site}"
    assert not installed.is_relative_to(REPO / "bindings-python" / "python"), installed


def test_one_version_everywhere() -> None:
    version = workspace_version()
    assert ferrolock.__version__ == version
    assert importlib.metadata.version("ferrolock") == version
