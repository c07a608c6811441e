#!/usr/bin/env python3
"""No import circle between the files of a binding or of the CLI: the files of each
folder import one another in one direction only, so a reader can take them in an
order where each builds on the ones before (core/tests/layers.rs checks core the
same way).

    python3 scripts/check_imports.py            # every tree the project has
    python3 scripts/check_imports.py DIR ...     # a Rust src/ dir or a Python package

Rust: a file's imports are the `crate::`, `super::` and `self::` paths it names (in
`use` lines and in code; comments and strings aside), and the crate-level macros of
other files it calls (`ffi!`). A folder's own file (lib.rs, main.rs, mod.rs, or the
a.rs beside a/) declares its members and is not one of them; a name it re-exports
from a member counts as that member's. Python: every `import`/`from ... import` of
a module of the package (at the top or inside a function: both are a dependency),
`from . import Name` counting as the module `__init__.py` took Name from.

Prints each circle found (one per folder) and exits 1; exits 0 when there is none.
"""

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Every tree checked by default: the bindings' and the CLI's (core's is layers.rs's).
TREES = [
    "bindings-c/src",
    "bindings-node/src",
    "bindings-python/src",
    "bindings-python/python/ferrolock",
    "cli/src",
]

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def rust_code_only(text):
    """The code of a Rust file with comments, string and char literals blanked."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            out.append(" ")
        elif (m := re.compile(r'b?r(#*)"').match(text, i)) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find('"' + m.group(1), m.end())
            i = n if end < 0 else end + 1 + len(m.group(1))
            out.append('""')
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'":
            # A char literal ('x', '\n', '\u{1F600}') or a lifetime ('a: no closing quote).
            m = re.compile(r"'(\\.[^']*|[^'\\])'").match(text, i)
            if m:
                out.append("' '")
                i = m.end()
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def rust_paths(code, at):
    """The paths of a `use` tree or path starting at `at` (`a::{b, c::d}` -> [a,b], [a,c,d])."""
    paths = []

    def tree(i, prefix):
        while i < len(code) and code[i].isspace():
            i += 1
        if i < len(code) and code[i] == "{":
            i += 1
            while True:
                i = tree(i, prefix)
                while i < len(code) and code[i].isspace():
                    i += 1
                if i >= len(code) or code[i] == "}":
                    return i + 1
                if code[i] == ",":
                    i += 1
                    while i < len(code) and code[i].isspace():
                        i += 1
                    if i < len(code) and code[i] == "}":
                        return i + 1
                else:
                    return i
        m = IDENT.match(code, i)
        if not m:
            if prefix:
                paths.append(prefix)
            return i
        path = prefix + [m.group(0)]
        i = m.end()
        if code.startswith("::", i):
            return tree(i + 2, path)
        paths.append(path)
        return i

    tree(at, [])
    return paths


class RustTree:
    def __init__(self, src):
        self.src = src
        self.files = sorted(p for p in src.rglob("*.rs"))
        self.modules = {}  # module path (tuple) -> file
        for f in self.files:
            self.modules[self.module_of(f)] = f
        self.code = {f: rust_code_only(f.read_text()) for f in self.files}

    def module_of(self, f):
        rel = f.relative_to(self.src).with_suffix("")
        parts = tuple(rel.parts)
        if parts in (("lib",), ("main",)):
            return ()
        if parts[-1] == "mod":
            parts = parts[:-1]
        return parts

    def reexports(self, module):
        """Names the module's own file re-exports from its members: name -> member."""
        f = self.modules.get(module)
        found = {}
        if f is None:
            return found
        code = self.code[f]
        for m in re.finditer(r"(?<![A-Za-z0-9_])use\s+", code):
            for path in rust_paths(code, m.end()):
                if path and path[0] in ("crate", "self"):
                    path = list(module) + path[1:] if path[0] == "self" else path[1:]
                    if tuple(path[: len(module)]) != module:
                        continue
                    path = path[len(module):]
                if len(path) >= 2 and module + (path[0],) in self.modules:
                    found[path[-1]] = path[0]
                elif len(path) == 1 and code.startswith("::*", m.end() + len(path[0])) and module + (path[0],) in self.modules:
                    # `pub use member::*`: every public item of the member.
                    for name in self.public_items(module + (path[0],)):
                        found.setdefault(name, path[0])
        return found

    def public_items(self, module):
        code = self.code[self.modules[module]]
        item = r'(?m)^pub(?:\([a-z]+\))?\s+(?:unsafe\s+)?(?:extern\s+""\s+)?(?:fn|struct|enum|type|const|static|trait|union|mod)\s+([A-Za-z_][A-Za-z0-9_]*)'
        return re.findall(item, code)

    def resolve(self, path):
        """The module a crate-rooted path names (its longest module prefix, then a re-export)."""
        module = ()
        for seg in path:
            if module + (seg,) in self.modules:
                module += (seg,)
            else:
                member = self.reexports(module).get(seg)
                if member is not None:
                    module += (member,)
                break
        return module

    def targets(self, f):
        """The modules a file names."""
        me = self.module_of(f)
        # A file's `self` is its module; `super` the one above (a.rs and a/mod.rs alike).
        code = self.code[f]
        out = set()
        for m in re.finditer(r"(?<![A-Za-z0-9_])(crate|super|self)::", code):
            for path in rust_paths(code, m.start()):
                base = list(me)
                rest = path
                if rest[0] == "crate":
                    base, rest = [], rest[1:]
                while rest and rest[0] in ("self", "super"):
                    if rest[0] == "super":
                        base = base[:-1]
                    rest = rest[1:]
                out.add(self.resolve(base + rest))
        # Macros defined at the top of another file (`macro_rules! ffi` in ffi.rs).
        for name, home in self.macros().items():
            if home != me and name not in self.local_macros(f) and re.search(r"(?<![A-Za-z0-9_])" + name + r"!", code):
                out.add(home)
        return out

    def local_macros(self, f):
        return set(re.findall(r"macro_rules!\s*([A-Za-z_][A-Za-z0-9_]*)", self.code[f]))

    def macros(self):
        if not hasattr(self, "_macros"):
            homes = {}
            for f in self.files:
                for name in re.findall(r"(?m)^macro_rules!\s*([A-Za-z_][A-Za-z0-9_]*)", self.code[f]):
                    homes.setdefault(name, set()).add(self.module_of(f))
            # A name defined in several files is each one's own (every_field!).
            self._macros = {k: next(iter(v)) for k, v in homes.items() if len(v) == 1}
        return self._macros

    def edges(self):
        for f in self.files:
            yield self.module_of(f), self.targets(f)


class PythonTree:
    def __init__(self, package):
        self.package = package
        self.name = package.name
        self.files = sorted(package.rglob("*.py"))
        self.modules = {self.module_of(f): f for f in self.files}
        self.trees = {f: ast.parse(f.read_text(), str(f)) for f in self.files}

    def module_of(self, f):
        parts = tuple(f.relative_to(self.package).with_suffix("").parts)
        return parts[:-1] if parts[-1] == "__init__" else parts

    def reexports(self, module):
        f = self.modules.get(module)
        found = {}
        if f is None:
            return found
        for node in ast.walk(self.trees[f]):
            if isinstance(node, ast.ImportFrom):
                target = self.absolute(module, True, node)
                if target is not None and len(target) > len(module):
                    for alias in node.names:
                        found[alias.asname or alias.name] = target[len(module)]
        return found

    def absolute(self, me, is_package, node):
        """The package-relative path an ImportFrom's module names (None: outside)."""
        if node.level:
            base = list(me) if is_package else list(me[:-1])
            base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
            rest = node.module.split(".") if node.module else []
            return tuple(base + rest)
        if node.module and node.module.split(".")[0] == self.name:
            return tuple(node.module.split(".")[1:])
        return None

    def resolve(self, path):
        module = ()
        for seg in path:
            if module + (seg,) in self.modules:
                module += (seg,)
            else:
                member = self.reexports(module).get(seg)
                if member is not None:
                    module += (member,)
                break
        return module

    def edges(self):
        for f in self.files:
            me = self.module_of(f)
            is_package = f.name == "__init__.py"
            out = set()
            for node in ast.walk(self.trees[f]):
                if isinstance(node, ast.ImportFrom):
                    base = self.absolute(me, is_package, node)
                    if base is None:
                        continue
                    for alias in node.names:
                        out.add(self.resolve(list(base) + [alias.name]))
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        parts = alias.name.split(".")
                        if parts[0] == self.name:
                            out.add(self.resolve(parts[1:]))
            yield me, out


def folder_graphs(tree):
    """folder -> member -> members it imports (only between different members of a folder)."""
    graphs = {}
    for me, targets in tree.edges():
        for target in targets:
            # The folder holding both ends in different members; an ancestor or a
            # descendant of the file is its own folder or one of its members, not a peer.
            k = 0
            while k < len(me) and k < len(target) and me[k] == target[k]:
                k += 1
            if k == len(me) or k == len(target):
                continue
            graphs.setdefault(me[:k], {}).setdefault(me[k], set()).add(target[k])
    return graphs


def circle(graph):
    done = set()

    def visit(node, path):
        if node in path:
            return path[path.index(node):] + [node]
        if node in done:
            return None
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            found = visit(nxt, path)
            if found:
                return found
        path.pop()
        done.add(node)
        return None

    for node in sorted(graph):
        found = visit(node, [])
        if found:
            return found
    return None


def check(directory):
    d = Path(directory)
    if not d.is_absolute():
        d = ROOT / d
    tree = PythonTree(d) if (d / "__init__.py").exists() else RustTree(d)
    graphs = folder_graphs(tree)
    # The parse sees imports at all (a tree whose files import nothing of one another
    # would pass for the wrong reason).
    if not graphs:
        return [f"{directory}: no import between its files found; is this the right directory?"]
    problems = []
    for folder, graph in sorted(graphs.items()):
        found = circle(graph)
        if found:
            where = "/".join([directory, *folder])
            problems.append(f"{where}/: import circle {' -> '.join(found)}")
    return problems


def self_test():
    """The check sees a circle made on purpose, in each language (so that it cannot
    pass for the wrong reason): a.rs <-> b.rs through `use crate::`, `super::` and a
    re-export; _a.py <-> _b.py through a type-checking-only import."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        rust = Path(tmp, "src")
        (rust / "m").mkdir(parents=True)
        (rust / "lib.rs").write_text("mod a;\nmod m;\npub use m::b::Thing;\n")
        (rust / "a.rs").write_text('// use crate::m; (a comment)\nconst S: &str = "crate::m";\npub fn f() -> crate::Thing { todo!() }\n')
        (rust / "m" / "mod.rs").write_text("pub mod b;\npub mod c;\n")
        (rust / "m" / "b.rs").write_text("pub struct Thing;\nuse super::c::g;\n")
        (rust / "m" / "c.rs").write_text("pub fn g() { crate::a::f(); }\n")
        python = Path(tmp, "pkg")
        python.mkdir()
        (python / "__init__.py").write_text("from ._a import A\n")
        (python / "_a.py").write_text("from ._b import B\nclass A(B): ...\n")
        (python / "_b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import A\nclass B: ...\n")
        found = check(str(rust)) + check(str(python))
    expected = ["a -> m -> a", "_a -> _b -> _a"]
    missed = [e for e in expected if not any(e in f for f in found)]
    if missed:
        return [f"check_imports.py's self-test: the circles {missed} were not found (found: {found})"]
    return []


def main(argv):
    dirs = argv[1:] or TREES
    if not argv[1:]:
        problems = self_test()
        if problems:
            print(*problems, sep="\n", file=sys.stderr)
            return 1
    problems = [p for d in dirs for p in check(d)]
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print("move what both sides need into a file below them both (see scripts/check_imports.py)", file=sys.stderr)
        return 1
    print(f"no import circle in {', '.join(dirs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
