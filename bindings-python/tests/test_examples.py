"""The examples run against a real server and print what they promise."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize("script", ["quickstart.py", "quickstart_aio.py"])
def test_example(url: str, script: str) -> None:
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / script), url], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert "total: 40" in out
    assert "held; lease left:" in out
