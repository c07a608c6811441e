"""Writes the C API page from bindings-c/include/ferrolock.h (cbindgen output: a
/** ... */ comment before every item) and fails when a function, type, enum value,
struct field or constant has none.

Usage: c_api.py HEADER OUT_MD
"""
import re
import sys
from pathlib import Path

# Guards and markers, not API.
INTERNAL = re.compile(r"^#define (FERROLOCK_H|\w+_DEFINED)\b")
SKIP = re.compile(r'^(#include|#ifndef|#ifdef|#if\b|#endif|#else|extern "C"|}\s*// extern|//)')
GROUPS = [  # (title, function-name prefix), first match wins
    ("Client", "ferrolock_client_"), ("Options", "ferrolock_options_"), ("Lock", "ferrolock_lock_"),
    ("Read-write lock", "ferrolock_rwlock_"), ("Multi-lock (Redlock, MultiLock)", "ferrolock_multilock_"),
    ("Semaphore", "ferrolock_semaphore_"), ("Permit-expirable semaphore", "ferrolock_permits_"),
    ("Count-down latch", "ferrolock_latch_"), ("Errors, logs and the rest", "ferrolock_"),
]


def clean(doc_lines):
    out = []
    for line in doc_lines:
        line = re.sub(r"^\s*/\*\*\s?", "", line)
        line = re.sub(r"\s*\*/\s*$", "", line)
        line = re.sub(r"^\s*\*( |$)", "", line)
        out.append(line.rstrip())
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out)


def parse(text):
    lines = text.split("\n")
    items, missing = [], []
    doc = None
    i = 0

    def take_doc():
        nonlocal doc
        d, doc = doc, None
        return d

    def read_comment(i):
        block = [lines[i]]
        while "*/" not in lines[i]:
            i += 1
            block.append(lines[i])
        return block, i + 1

    while i < len(lines):
        line = lines[i]
        s = line.strip()
        if s.startswith("/**"):
            block, i = read_comment(i)
            doc = clean(block)
            continue
        if s.startswith("/*"):
            _, i = read_comment(i)  # the file's header comment and plain notes
            if items == [] and doc is None:
                pass
            continue
        if not s or SKIP.match(s) or INTERNAL.match(s):
            i += 1
            continue
        m = re.match(r"^typedef (enum|struct) (\w+) \{", s)
        if m:
            kind, name = m.groups()
            d = take_doc()
            members, body, mdoc = [], [], None
            i += 1
            while not lines[i].startswith("}"):
                t = lines[i].strip()
                if t.startswith("/**"):
                    block, i = read_comment(i)
                    mdoc = clean(block)
                    continue
                if t:
                    mname = re.match(r"^(?:[\w\s\*\(\)]+?[\s\*\(])?(\w+)\s*(?:=.*)?[,;]?\s*$", t.rstrip(",;"))
                    mname = re.findall(r"\w+", t.split("=")[0].split("[")[0])[-1]
                    members.append((mname, t, mdoc))
                    body.append("    " + t)
                    if not mdoc:
                        missing.append(f"{name}.{mname}")
                    mdoc = None
                i += 1
            sig = f"typedef {kind} {name} {{\n" + "\n".join(body) + f"\n}} {name};"
            items.append((kind, name, sig, d, members))
            if not d:
                missing.append(name)
            i += 1
            continue
        # One declaration: up to ';' or, for a static inline function, its '{'.
        decl = [s]
        while not re.search(r"[;{]\s*$", decl[-1]) and not s.startswith("#define"):
            i += 1
            decl.append(lines[i].strip())
        i += 1
        joined = " ".join(decl)
        if joined.endswith("{"):  # skip the inline body
            depth = 1
            while depth:
                depth += lines[i].count("{") - lines[i].count("}")
                i += 1
            joined = joined[:-1].rstrip() + ";"
        d = take_doc()
        if joined.startswith("#define"):
            name = joined.split()[1]
            kind = "constant"
        elif m := re.match(r"^typedef struct (\w+) \1;$", joined):
            name, kind = m.group(1), "opaque"
        elif m := re.match(r"^typedef .*\(\*(\w+)\)", joined):
            name, kind = m.group(1), "callback"
        elif m := re.search(r"(\w+)\s*\(", joined):
            name, kind = m.group(1), "function"
        else:
            sys.exit(f"c_api: cannot read this declaration of ferrolock.h: {joined}")
        items.append((kind, name, joined, d, []))
        if not d:
            missing.append(name)
    return items, missing


def fmt_sig(sig):
    # One parameter a line for long prototypes.
    if len(sig) > 90 and "(" in sig and not sig.startswith("typedef enum") and not sig.startswith("typedef struct"):
        head, rest = sig.split("(", 1)
        params = rest.rsplit(")", 1)[0]
        parts = [p.strip() for p in params.split(",")]
        return head + "(" + ",\n".join(("" if k == 0 else "    ") + p for k, p in enumerate(parts)) + ");"
    return sig


def render(items):
    out = ["# C API: ferrolock.h", "",
           "Generated from the comments of `bindings-c/include/ferrolock.h` (itself generated by "
           "cbindgen from `bindings-c/src/lib.rs`) by `scripts/docs/c_api.py`. The guides start at "
           "[getting started with C](../guides/getting-started-c.md).", ""]
    header_doc = None
    kinds = {"constant": [], "enum": [], "opaque": [], "struct": [], "callback": [], "function": []}
    for it in items:
        kinds[it[0]].append(it)
    toc = ["## Contents", ""]
    body = []

    def item(kind, name, sig, doc, members):
        body.extend([f"### {name}", "", "```c", fmt_sig(sig), "```", "", doc or "", ""])
        if kind == "enum":
            body.extend(["| value | meaning |", "|---|---|"])
            for mname, _, mdoc in members:
                body.append(f"| `{mname}` | {' '.join((mdoc or '').split()).replace('|', '&#124;')} |")
            body.append("")
        if kind == "struct":
            body.extend(["| field | meaning |", "|---|---|"])
            for mname, t, mdoc in members:
                body.append(f"| `{t.rstrip(';')}` | {' '.join((mdoc or '').split()).replace('|', '&#124;')} |")
            body.append("")

    for title, kind in [("Constants", "constant"), ("Statuses and other enums", "enum"),
                        ("Handles (opaque types)", "opaque"), ("Structs", "struct"), ("Callbacks", "callback")]:
        if not kinds[kind]:
            continue
        body.extend([f"## {title}", ""])
        toc.append(f"- [{title}](#{title.lower().replace(' ', '-').replace('(', '').replace(')', '')}): "
                   + ", ".join(f"[`{n}`](#{n.lower()})" for _, n, *_ in kinds[kind]))
        for it in kinds[kind]:
            item(*it)
    done = set()
    for title, prefix in GROUPS:
        fns = [it for it in kinds["function"] if it[1].startswith(prefix) and it[1] not in done]
        if not fns:
            continue
        done.update(it[1] for it in fns)
        body.extend([f"## Functions: {title}", ""])
        toc.append(f"- {title}: " + ", ".join(f"[`{n}`](#{n.lower()})" for _, n, *_ in fns))
        for it in fns:
            item(*it)
    return "\n".join(out + toc + [""] + body) + "\n"


def main(header, out_md):
    text = Path(header).read_text()
    items, missing = parse(text)
    if missing:
        print(f"c_api: {len(missing)} names of {header} have no doc comment:", file=sys.stderr)
        for m in missing:
            print(f"  {m}", file=sys.stderr)
        sys.exit(1)
    Path(out_md).parent.mkdir(parents=True, exist_ok=True)
    Path(out_md).write_text(render(items))
    n = {k: sum(1 for it in items if it[0] == k) for k in ("function", "enum", "opaque", "struct", "constant", "callback")}
    values = sum(len(it[4]) for it in items if it[0] == "enum")
    print(f"c_api: {n['function']} functions, {n['enum']} enums ({values} values), "
          f"{n['opaque'] + n['struct'] + n['callback']} types, {n['constant']} constants, all documented")


if __name__ == "__main__":
    main(*sys.argv[1:])
