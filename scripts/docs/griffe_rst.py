"""A griffe extension for the Python API pages: the binding's docstrings are written for
Sphinx (``:class:`Lock```, ``Quick start::``); MkDocs renders Markdown, so the roles
become code spans (linked by mkdocstrings' autorefs where the name is documented) and
``::`` becomes ``:``. Only the rendering changes; the docstrings stay as they are."""
import re

import griffe

ROLE = re.compile(r":(?:class|meth|func|attr|mod|exc|data|obj):`~?([^`]+)`")


def markdown(text: str) -> str:
    text = ROLE.sub(lambda m: f"`{m.group(1).strip('.')}`", text)
    return re.sub(r"::$", ":", text, flags=re.M)


class RestToMarkdown(griffe.Extension):
    """Rewrites every docstring of the loaded package as it is loaded."""

    def on_object(self, *, obj, **kwargs):
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)

    def on_instance(self, *, obj, **kwargs):
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
