"""Griffe extension for the docs build: read ``Example:`` sections as doctest examples.

The packages' docstrings head their doctests ``Example:``; griffe's Google parser reads only
``Examples:`` as an examples section (and ``Example:`` as an admonition whose body would be
rendered as Markdown). This renames the heading when griffe loads a docstring, so the API
reference shows the doctests as code without editing the sources.
"""

import re
from typing import Any

import griffe

_EXAMPLE_HEADING = re.compile(r"^(\s*)Example:\s*$", re.MULTILINE)


class ExampleSections(griffe.Extension):
    """Rename ``Example:`` headings to ``Examples:`` in every loaded docstring."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _EXAMPLE_HEADING.sub(r"\1Examples:", obj.docstring.value)
