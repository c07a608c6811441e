"""Fails when a page of the built site links to a file or an anchor that is not there.

Checks every relative href/src of the site's own pages (MkDocs's, the C and Python
references) and of the Rust and Node references (links into other crates' rustdoc
that was not built are reported too). External links (http:, https:, mailto:) are not
followed: the site must work offline, and the check must not need a network.

Usage: check_links.py SITE_DIR
"""
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("id", "name") if tag == "a" else ("id",):
            if a.get(key):
                self.ids.add(a[key])
        for key in ("href", "src"):
            if a.get(key) and not (tag == "link" and a.get("rel") in ("canonical",)):
                self.links.append(a[key])


def parse(path, cache):
    if path not in cache:
        p = Page()
        p.feed(path.read_text(errors="replace"))
        cache[path] = p
    return cache[path]


def main(site):
    site = Path(site).resolve()
    cache, broken, checked = {}, [], 0
    pages = [p for p in site.rglob("*.html")
             if p.relative_to(site).parts[:3] != ("api", "rust", "src")  # rustdoc's source view
             and p.name != "404.html"]  # MkDocs's 404 page links from the server root on purpose
    for page in pages:
        rel_page = page.relative_to(site)
        in_rust = rel_page.parts[:2] == ("api", "rust")
        if in_rust and rel_page.parts[2:3] != ("ferrolock",):
            continue  # other crates' rustdoc that happens to share target/doc
        for link in parse(page, cache).links:
            u = urlsplit(link)
            if u.scheme or link.startswith("//") or link.startswith("javascript:") or link.startswith("data:"):
                continue
            if in_rust and not (u.path == "" or u.path.endswith(".html") or "." in Path(u.path).name):
                continue  # a link in another crate's doc text that rustdoc copies (tracing's `dispatcher#...`)
            target = page if not u.path else (page.parent / unquote(u.path)).resolve()
            checked += 1
            if u.path.endswith("/") or target.is_dir():
                target = target / "index.html"
            if not str(target).startswith(str(site)) and not (in_rust and "/src/" in str(target)):
                broken.append(f"{rel_page}: {link} (outside the site)")
                continue
            if not target.exists():
                if in_rust and ("/src/" in link or link.startswith("../src/")):
                    continue
                if in_rust and "trait.impl/" in link and link.endswith(".js"):
                    continue  # rustdoc's script of a trait's implementors elsewhere: written only when there are some
                broken.append(f"{rel_page}: {link}")
                continue
            frag = unquote(u.fragment)
            if frag and target.suffix == ".html" and not in_rust and not rel_page.parts[:2] == ("api", "node"):
                if frag not in parse(target, cache).ids:
                    broken.append(f"{rel_page}: {link} (no #{frag} there)")
    if broken:
        print(f"check_links: {len(broken)} broken internal links:", file=sys.stderr)
        for b in broken:
            print(f"  {b}", file=sys.stderr)
        sys.exit(1)
    print(f"check_links: {checked} internal links in {len(pages)} pages, none broken")


if __name__ == "__main__":
    main(*sys.argv[1:])
