"""Griffe extension for the docs build: docstrings written for Sphinx, rendered by mkdocstrings.

The packages' docstrings head their doctests ``Example:``; griffe's Google parser reads only
``Examples:`` as an examples section (and ``Example:`` as an admonition whose body would be
rendered as Markdown). They also use Sphinx roles (``:func:`name` ``), which Markdown would
show verbatim. This rewrites both when griffe loads a docstring, so the API reference shows
the doctests as code and the roles as code spans, without editing the sources.
"""

import re
from typing import Any

import griffe

_EXAMPLE_HEADING = re.compile(r"^(\s*)Example:\s*$", re.MULTILINE)
_SPHINX_ROLE = re.compile(r":(?:class|func|mod|meth|attr|data|exc|obj):`~?([^`]+)`")


class SphinxDocstrings(griffe.Extension):
    """``Example:`` headings become ``Examples:``, Sphinx roles become code spans.

    Every object of the loaded package is rewritten once it is loaded (``on_package``): griffe
    calls ``on_object`` for classes and functions but not for modules, whose docstrings (the
    packages' ``__init__``) would otherwise keep ``Example:`` and render as block quotes."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        stack: list[griffe.Object] = [pkg]
        while stack:
            obj = stack.pop()
            _rewrite(obj)
            stack.extend(m for m in obj.members.values() if not m.is_alias)  # type: ignore[misc]


def _rewrite(obj: griffe.Object) -> None:
    if obj.docstring is not None:
        text = _EXAMPLE_HEADING.sub(r"\1Examples:", obj.docstring.value)
        obj.docstring.value = _SPHINX_ROLE.sub(r"`\1`", text)
