"""Writes the Python API pages (mkdocstrings directives, one section per public name of
`ferrolock` and `ferrolock.aio`) and fails when a public name has no docstring.

Public: every name in a module's __all__, and every member of an exported class whose
name does not start with "_" (inherited ones included: a user calls them on the class),
except what Python's own bases bring. Reads the source statically with griffe (the
docstrings and annotations of the .py files and the _native.pyi stub), so it needs no
built extension.

Usage: python_api.py SRC_DIR OUT_DIR
"""
import sys
from pathlib import Path

import griffe

MODULES = {"ferrolock": "python.md", "ferrolock.aio": "python-aio.md"}
TITLES = {
    "ferrolock": "Python API: ferrolock (blocking)",
    "ferrolock.aio": "Python API: ferrolock.aio (asyncio)",
}


def undocumented(obj, path, seen, out):
    if obj.is_alias:
        try:
            obj = obj.final_target
        except griffe.AliasResolutionError:
            return  # outside the package (e.g. logging.Logger): documented there
    if not obj.docstring or not obj.docstring.value.strip():
        out.append(path)
    if not obj.is_class or obj.path in seen:
        return
    seen.add(obj.path)
    for name, member in obj.all_members.items():
        if name.startswith("_"):
            continue
        if member.is_alias:
            try:
                target = member.final_target
            except griffe.AliasResolutionError:
                continue
        else:
            target = member
        if not target.path.startswith("ferrolock"):
            continue  # inherited from Python's own classes
        if not target.docstring or not target.docstring.value.strip():
            if target.is_attribute and inherits_doc(obj, name):
                continue  # a subclass's value of a documented attribute (LockError.code)
            out.append(f"{path}.{name} ({target.path})")


def inherits_doc(cls, name):
    for base in cls.mro():
        member = base.members.get(name)
        if member is not None and not member.is_alias and member.docstring and member.docstring.value.strip():
            return True
    return False


def main(src, out_dir):
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    pkg = griffe.load("ferrolock", search_paths=[src], resolve_aliases=True, resolve_external=False)
    missing = []
    for modname, page in MODULES.items():
        mod = pkg if modname == "ferrolock" else pkg[modname.split(".", 1)[1]]
        names = list(mod.exports or [])
        if not names:
            sys.exit(f"{modname} has no __all__")
        for name in names:
            undocumented(mod[name], f"{modname}.{name}", set(), missing)
        lines = [f"# {TITLES[modname]}", ""]
        if mod.docstring:
            lines += [f"::: {modname}", "    options:", "      members: false", "      show_root_heading: false", ""]
        lines += ["## Public names", ""]
        lines += [", ".join(f"[`{n}`](#{modname}.{n})" for n in names), ""]
        for name in names:
            lines += [f"::: {modname}.{name}", "    options:", "      show_root_heading: true",
                      "      show_root_full_path: true", ""]
        (out_dir / page).write_text("\n".join(lines))
    # One line per undocumented object, however many exported names reach it.
    missing = list(dict.fromkeys(m.split(" (")[-1].rstrip(")") if " (" in m else m for m in missing))
    if missing:
        print(f"python_api: {len(missing)} public Python names have no docstring:", file=sys.stderr)
        for m in missing:
            print(f"  {m}", file=sys.stderr)
        sys.exit(1)
    print(f"python_api: {sum(len((pkg if m == 'ferrolock' else pkg['aio']).exports) for m in MODULES)} public names, all documented")


if __name__ == "__main__":
    main(*sys.argv[1:])
