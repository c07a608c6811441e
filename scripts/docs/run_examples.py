"""Extracts the runnable examples of the docs and runs them against a Redis server.

A runnable example is, in docs/site/**.md, a fenced block preceded by the line
`<!-- run -->`; in README.md and bindings-*/README.md (never marked), a C block with
`int main(` and a Python block that starts with an import and ends by calling main().
`redis://127.0.0.1:6379` in an example becomes the URL given here.

Usage: run_examples.py REDIS_URL WORKDIR   (environment: PYTHON, NODE_PATH, FERROLOCK_CFLAGS,
FERROLOCK_LIBS, PATH with the ferrolock command; a language whose tool is missing fails)
"""
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```\s*$", re.M | re.S)
LANG = {"python": "python", "py": "python", "js": "node", "javascript": "node", "c": "c", "sh": "shell", "bash": "shell"}
TIMEOUT = 60


def examples():
    for md in sorted((ROOT / "docs/site").rglob("*.md")):
        text = md.read_text()
        for m in FENCE.finditer(text):
            before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
            if before == "<!-- run -->" and m.group(1) in LANG:
                yield md, text[: m.start()].count("\n") + 1, LANG[m.group(1)], m.group(2)
    for md in [ROOT / "README.md", *sorted(ROOT.glob("bindings-*/README.md"))]:
        text = md.read_text()
        for m in FENCE.finditer(text):
            lang, code = LANG.get(m.group(1)), m.group(2)
            line = text[: m.start()].count("\n") + 1
            last = code.strip().rsplit("\n", 1)[-1]
            if lang == "c" and "int main(" in code:
                yield md, line, lang, code
            elif lang == "python" and code.startswith(("import ", "from ")) and re.search(r"\bmain\(\)\)?$", last):
                yield md, line, lang, code


def run(lang, code, url, work, n):
    code = re.sub(r"redis://127\.0\.0\.1:6379(/0)?", url, code)
    env = dict(os.environ, REDIS_URL=url)
    if lang == "python":
        f = work / f"ex{n}.py"
        f.write_text(code)
        cmd = [os.environ["PYTHON"], str(f)]
    elif lang == "node":
        f = work / f"ex{n}.js"
        f.write_text(code)
        cmd = ["node", str(f)]
    elif lang == "shell":
        f = work / f"ex{n}.sh"
        f.write_text(code)
        cmd = ["bash", str(f)]
    else:
        src, exe = work / f"ex{n}.c", work / f"ex{n}"
        src.write_text(code)
        build = subprocess.run(["gcc", "-std=c11", "-Wall", "-Werror", *os.environ["FERROLOCK_CFLAGS"].split(), str(src),
                                *os.environ["FERROLOCK_LIBS"].split(), "-o", str(exe)], capture_output=True, text=True)
        if build.returncode:
            return False, build.stdout + build.stderr
        cmd = [str(exe)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=env, cwd=work)
    except subprocess.TimeoutExpired:
        return False, f"timed out after {TIMEOUT} s"
    return p.returncode == 0, p.stdout + p.stderr


def main(url, work):
    work = Path(work)
    counts, failed = {}, []
    for n, (md, line, lang, code) in enumerate(examples()):
        started = time.monotonic()
        ok, out = run(lang, code, url, work, n)
        where = f"{md.relative_to(ROOT)}:{line}"
        c = counts.setdefault(lang, [0, 0])
        c[0 if ok else 1] += 1
        print(f"{'ok  ' if ok else 'FAIL'} {lang:6} {where} ({time.monotonic() - started:.1f} s)")
        if not ok:
            failed.append(where)
            print("     " + out.strip().replace("\n", "\n     "))
    for lang, (ok, bad) in sorted(counts.items()):
        print(f"examples: {lang}: {ok + bad} ran, {ok} passed, {bad} failed")
    with open(work / "counts", "w") as f:
        f.write(f"{sum(c[0] for c in counts.values())} {sum(c[1] for c in counts.values())}\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
