"""Code typed rather than saved: every documentation example gives the same results typed into
the plain REPL (through a pseudo-terminal, so readline keeps the history the engine reads its
source from) and run with ``python -c`` (whose text is in ``sys.orig_argv``) as it does from a file
(the pages' own doctest run)."""

from __future__ import annotations

import ast
import doctest
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from _pytest.doctest import _get_checker, _get_number_flag

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([*(ROOT / "docs").rglob("*.md"), ROOT / "README.md"])
FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS | _get_number_flag()  # as pyproject.toml sets
END = "@@zygotepy-example-end@@"


def examples(page: Path) -> list[doctest.Example]:
    return doctest.DocTestParser().get_examples(page.read_text(), str(page))


#: Pages typed in by the default run; the rest run with ``--exhaustive`` (a step of its own in .ci/run).
FIRST_HOUR = {"README.md", "docs/getting-started.md"}


def pages_with_examples() -> list[Any]:
    return [p if str(p.relative_to(ROOT)) in FIRST_HOUR else pytest.param(p, marks=pytest.mark.exhaustive)
            for p in PAGES if examples(p)]


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(TERM="dumb", PYTHONPATH=str(ROOT), PYTHONHASHSEED="0", COLUMNS="1000")
    return env


def _matches(example: doctest.Example, got: str) -> bool:
    """``got`` as the suite's doctest run would judge it (pytest's checker, with its NUMBER
    option); an exception by its type's name and message, from the line that names it."""
    checker = _get_checker()
    if example.exc_msg is not None:
        name = example.exc_msg.split(":", 1)[0].rsplit(".", 1)[-1]
        lines = got.strip().splitlines()
        starts = [i for i, ln in enumerate(lines) if ln.split(":", 1)[0].rsplit(".", 1)[-1] == name]
        if not starts:
            return False
        raised = "\n".join(lines[starts[-1]:])
        message = raised.split(": ", 1)[-1] + "\n"
        wanted = example.exc_msg.split(": ", 1)[-1] if ": " in example.exc_msg else example.exc_msg
        return checker.check_output(wanted, message, FLAGS)
    return checker.check_output(example.want, got, FLAGS)


@pytest.mark.parametrize("page", pages_with_examples(), ids=lambda p: str(p.relative_to(ROOT)))
def test_examples_typed_into_the_plain_repl(page: Path, tmp_path: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    child = pexpect.spawn(sys.executable, ["-q"], cwd=str(tmp_path), env=_environment(), encoding="utf-8",
                          timeout=120, dimensions=(24, 1000))
    try:
        child.expect(">>> ")
        for example in examples(page):
            lines = example.source.rstrip("\n").split("\n")
            compound = len(lines) > 1 or lines[0].rstrip().endswith(":")
            for line in lines:
                child.sendline(line)
            if compound:
                child.sendline("")  # the REPL ends a block at an empty line
            child.expect(">>> ")  # the example ran: typing on now cannot interleave with its output
            before = child.before
            child.sendline(f"print({END!r})")  # the example's output ends where this prints
            child.expect(f"\r\n{END}\r\n>>> ")
            got = (before + child.before).replace("\r\n", "\n")
            lines = [*lines, f"print({END!r})"]
            typed = {s.rstrip() for s in lines if s.strip()}
            output = [ln for ln in got.split("\n")
                      if ln.removeprefix("... ").removeprefix(">>> ").rstrip() not in typed]
            text = "\n".join(ln for ln in output if ln.strip() not in ("", "...", ">>>")) + "\n"
            assert _matches(example, text), (
                f"{page.name}:{example.lineno + 1} typed into the REPL\n{example.source}"
                f"expected:\n{example.exc_msg or example.want}got:\n{text}")
    finally:
        child.close(force=True)


class _Shown(ast.NodeTransformer):
    """Every expression statement outside functions and classes shows its value, as in the REPL
    (which compiles what is typed in ``single`` mode)."""

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        show = ast.Call(func=ast.Attribute(value=ast.Name("_zp_sys", ast.Load()), attr="displayhook",
                                           ctx=ast.Load()), args=[node.value], keywords=[])
        return ast.copy_location(ast.Expr(value=show), node)

    def visit_FunctionDef(self, node: ast.AST) -> ast.AST:
        return node

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef


def _as_script(page: Path) -> str:
    """The page's examples as one ``python -c`` program: each example's values shown as the REPL
    would (``sys.displayhook``) and its exception's last line printed, then a marker."""
    parts = ["import sys as _zp_sys, traceback as _zp_tb"]
    for example in examples(page):
        source = ast.unparse(_Shown().visit(ast.parse(example.source))) + "\n"
        parts.append("try:\n" + textwrap.indent(source, "    ") + "except BaseException as _zp_e:\n"
                     "    print(''.join(_zp_tb.format_exception_only(type(_zp_e), _zp_e)).strip())\n"
                     f"print({END!r})")
    return "\n".join(parts) + "\n"


@pytest.mark.parametrize("page", pages_with_examples(), ids=lambda p: str(p.relative_to(ROOT)))
def test_examples_run_with_python_c(page: Path, tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-c", _as_script(page)], cwd=tmp_path, env=_environment(),
                            capture_output=True, text=True, timeout=600)
    outputs = result.stdout.split(END + "\n")
    cases = examples(page)
    assert len(outputs) == len(cases) + 1, result.stderr[-3000:]
    for example, got in zip(cases, outputs, strict=False):
        assert _matches(example, got), (
            f"{page.name}:{example.lineno + 1} run with python -c\n{example.source}"
            f"expected:\n{example.exc_msg or example.want}got:\n{got}")
