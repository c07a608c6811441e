"""Checks that the site documents every option and exit code of the `ferrolock` command.

    python3 scripts/docs/check_cli.py FERROLOCK_BINARY docs/site/guides/cli.md

The lists come from the command itself: the options of `ferrolock --help` and of each
command's `--help` (clap prints every option it defines but hidden ones), and the
exit codes of the "Exit status:" table that `--help` prints (cli/src/exit.rs's TABLE).
The page must name each option inside code (`--wait`, `-n`, `status --json`) and give
each exit code a row of its own (`| 65 |`). Fails listing what is missing."""

from __future__ import annotations

import re
import subprocess
import sys

COMMANDS = ["run", "status", "unlock", "latch", "top", "demo"]
OPTION = re.compile(r"^(?:  (-[A-Za-z]), |      )(--[a-z][a-z-]*)")
EXIT_ROW = re.compile(r"^  (\d+\+N|\d+(?: or CMD's)?)\s{2,}", re.M)


def help_text(binary: str, *args: str) -> str:
    out = subprocess.run([binary, *args, "--help"], capture_output=True, text=True, check=True, env={"PATH": ""})
    return out.stdout


def options_block(text: str) -> list[str]:
    """The lines of clap's "Options:" section (it ends at the first unindented line)."""
    lines = text.split("\nOptions:\n", 1)[1].splitlines()
    block = []
    for line in lines:
        if line and not line.startswith(" "):
            break
        block.append(line)
    return block


def main(binary: str, page_path: str) -> int:
    page = open(page_path).read()
    top = help_text(binary)
    options: set[str] = set()
    for text in [top] + [help_text(binary, c) for c in COMMANDS]:
        for line in options_block(text):
            m = OPTION.match(line)
            if m:
                options.update(o for o in m.groups() if o)
    exit_table = top.split("Exit status:", 1)[1]
    codes = set(EXIT_ROW.findall(exit_table))
    fenced = re.findall(r"^```.*?^```", page, re.S | re.M)
    inline = re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```", "", page, flags=re.S | re.M))
    in_code = {word for span in fenced + inline for word in re.split(r"[\s,=/\[\]()|]+", span)}
    missing = sorted(o for o in options if o not in in_code)
    missing_codes = sorted(c for c in codes if f"| {c} |" not in page)
    for o in missing:
        print(f"check_cli: {page_path} does not name the option {o} (in `code`)", file=sys.stderr)
    for c in missing_codes:
        print(f"check_cli: {page_path} has no row for exit code {c}", file=sys.stderr)
    if missing or missing_codes or not options or not codes:
        if not options or not codes:
            print("check_cli: read no options or no exit codes from --help", file=sys.stderr)
        return 1
    print(f"cli reference: all {len(options)} options and {len(codes)} exit codes of `ferrolock --help` documented")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
