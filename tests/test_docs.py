"""The documentation site: the nav of mkdocs.yml and the pages in docs/ agree, and every code
example on every page is run (the pages themselves run as doctests, ``--doctest-glob='*.md'``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

#: Fenced blocks of another system's code (shown beside ours, not run): ``title="..."`` values.
FOREIGN_TITLES = {"JAX", "PyTorch", "Zygote", "ChainRulesCore", "ChainRulesTestUtils"}
#: Languages that are not Python: shown, never run.
NOT_PYTHON = {"bash", "julia", "text", "toml", "yaml"}
FENCE = re.compile(r"^(?P<indent> *)```(?P<info>[^\n]*)\n(?P<body>.*?)^(?P=indent)```", re.S | re.M)


def nav_pages(entries: list[Any]) -> list[str]:
    """Every page path in a mkdocs nav (nested sections flattened, URLs left out)."""
    out: list[str] = []
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        if isinstance(value, list):
            out += nav_pages(value)
        elif not re.match(r"[a-z]+://", value):
            out.append(value)
    return out


def load_config() -> dict[str, Any]:
    text = (ROOT / "mkdocs.yml").read_text()
    config: dict[str, Any] = yaml.safe_load(text)
    return config


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def test_nav_lists_every_page_and_every_page_exists() -> None:
    listed = nav_pages(load_config()["nav"])
    twice = sorted({p for p in listed if listed.count(p) > 1})
    assert not twice, f"pages listed twice in the nav: {twice}"
    missing = [p for p in listed if not (DOCS / p).is_file()]
    assert not missing, f"mkdocs.yml lists pages that do not exist: {missing}"
    unlisted = [str(p.relative_to(DOCS)) for p in pages() if str(p.relative_to(DOCS)) not in listed]
    assert not unlisted, f"pages in docs/ missing from the nav of mkdocs.yml: {unlisted}"


def test_nav_pages_helper_flattens_sections() -> None:
    nav = [{"Home": "index.md"}, "api.md", {"Guides": [{"A": "a/b.md"}, {"Site": "https://x.org"}]}]
    assert nav_pages(nav) == ["index.md", "api.md", "a/b.md"]


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(DOCS)))
def test_every_python_block_is_run(page: Path) -> None:
    """A fenced Python block is a doctest (so pytest runs it and checks its output) or another
    system's code, titled with its name. Plain ```python blocks would be shown and never run."""
    text = page.read_text()
    for m in FENCE.finditer(text):
        info, body = m["info"].strip(), m["body"]
        language = info.split()[0] if info else ""
        if language in NOT_PYTHON:
            continue
        title = re.search(r'title="([^"]*)"', info)
        if title and title[1] in FOREIGN_TITLES:
            continue
        line = text[: m.start()].count("\n") + 1
        assert ">>> " in body, f"{page.name}:{line}: a ```{info} block that is not a doctest is never run"
        # the expected output of a doctest runs until a blank line: the closing fence needs one
        # before it, or doctest would expect the fence as output
        last = body.rstrip(" ").splitlines()[-1] if body.strip() else ""
        assert last.strip() == "", f"{page.name}:{line}: leave a blank line before the closing fence"


def test_foreign_blocks_sit_beside_ours() -> None:
    """Every titled block of another system's code is in a side-by-side grid with our version."""
    for page in pages():
        text = page.read_text()
        for m in FENCE.finditer(text):
            title = re.search(r'title="([^"]*)"', m["info"])
            if not (title and title[1] in FOREIGN_TITLES):
                continue
            start = text.rfind('<div class="grid" markdown>', 0, m.start())
            end = text.find("</div>", m.end())
            inside = start != -1 and end != -1 and "</div>" not in text[start:m.start()]
            grid = text[start:end] if inside else ""
            assert ">>> " in grid, f"{page.name}: {title[1]} code without our version beside it"


def test_ci_runs_exactly_the_readme_commands() -> None:
    """The README's first two commands (install and run the demo; install the test extras and
    run the suite) are lines of .ci/run, verbatim."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"^```bash\n(.*?)^```", readme, re.S | re.M)
    assert block is not None, "the README has no ```bash block of set-up commands"
    commands = [line for line in block[1].splitlines() if line.strip()][:2]
    assert "python3 -m venv .venv" in commands[0] and "zygotepy.demo" in commands[0]
    assert "pytest" in commands[1]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    for command in commands:
        assert command in ci, f".ci/run does not run the README command {command!r}"


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(DOCS)))
def test_doctests_render_as_code(page: Path) -> None:
    """A ``>>>`` line at the margin outside a fence is Markdown for a nested block quote: put
    doctests in a ```pycon fence (or indent them four spaces)."""
    in_fence = False
    for number, line in enumerate(page.read_text().splitlines(), 1):
        if re.match(r"\s*```", line):
            in_fence = not in_fence
        assert in_fence or not line.startswith(">>>"), f"{page.name}:{number}: a doctest outside a code block"


def commonmark_tokens(text: str) -> list[Any]:
    """The block tokens of ``text`` as a CommonMark renderer (the package index, GitHub) parses it."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").parse(text)


def unclosed_fences(text: str) -> list[int]:
    """The 1-based lines of fenced code blocks that no closing fence ends: CommonMark runs each of
    them to the end of its container, swallowing the rest of the page."""
    lines = text.splitlines()
    out = []
    for token in commonmark_tokens(text):
        if token.type != "fence" or token.map is None:
            continue
        start, end = token.map
        closing = lines[end - 1].strip() if end - 1 < len(lines) and end - 1 > start else ""
        marker = token.markup
        if not (closing.startswith(marker) and set(closing) <= {marker[0]}):
            out.append(start + 1)
    return out


def test_unclosed_fences_finds_a_stray_fence() -> None:
    assert unclosed_fences("# T\n\n```bash\nls\n```\n\ntext\n") == []
    assert unclosed_fences("# T\n\n```bash\nls\n```\n```\n## Lost\n") == [6]
    assert unclosed_fences("~~~\ncode\n~~~~\n\n````\nx\n```\n") == [5]


#: README.md's sections, in order: it is also rulescore's page on the package index.
README_HEADINGS = [
    (1, "rulescore + zygotepy"), (2, "Quick start"), (2, "Installing for your own project"),
    (2, "Documentation"), (2, "What the test suite skips, and why"),
]


def test_readme_renders_as_intended() -> None:
    """Parsed by a CommonMark parser, README.md has its sections (none swallowed into a code block
    by a stray fence, none repeated) and every fence closes."""
    text = (ROOT / "README.md").read_text()
    tokens = commonmark_tokens(text)
    headings = [(int(t.tag[1]), tokens[i + 1].content)
                for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings == README_HEADINGS
    assert unclosed_fences(text) == []
    fences = [t.content for t in tokens if t.type == "fence"]
    repeated = sorted({f for f in fences if fences.count(f) > 1})
    assert not repeated, f"README.md repeats a code block: {repeated}"


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(DOCS)))
def test_every_fence_closes(page: Path) -> None:
    assert unclosed_fences(page.read_text()) == [], f"{page.name}: a fence that never closes"


#: The widest code line the site shows whole at 1280 px (Material's content column); longer ones scroll.
CODE_WIDTH = 88


@pytest.mark.parametrize("page", [*pages(), ROOT / "README.md"], ids=lambda p: p.name if p.parent == ROOT else
                         str(p.relative_to(DOCS)))
def test_code_comments_are_not_clipped(page: Path) -> None:
    """A comment at the end of a long code line is cut off where the code block scrolls: put it on
    its own line (doctest directives must stay on their line)."""
    fence = False
    for number, line in enumerate(page.read_text().splitlines(), 1):
        if re.match(r"\s*```", line):
            fence = not fence
            continue
        code = fence or line.startswith("    ")
        if code and len(line) > CODE_WIDTH and re.search(r"\s#\s(?!doctest:)", line):
            pytest.fail(f"{page.name}:{number}: a comment past column {CODE_WIDTH}: {line.strip()}")


def test_the_site_loads_nothing_from_the_network() -> None:
    """Offline readers see the whole site: no CDN scripts or styles (MathJax, Google Fonts), and no
    TeX math on the pages, which would show raw without a script to render it."""
    config = load_config()
    assert config["theme"].get("font") is False, "Material loads Google Fonts unless theme.font is false"
    remote = [u for key in ("extra_javascript", "extra_css") for u in config.get(key, [])
              if re.match(r"(https?:)?//", str(u))]
    assert not remote, f"mkdocs.yml loads {remote} from the network"
    for page in pages():
        prose = FENCE.sub("", page.read_text())
        prose = re.sub(r"`[^`\n]*`", "", prose)  # code spans may hold any characters
        assert not re.search(r"\$[^$\n]*\\[a-zA-Z]+|\\\(|\\\[", prose), f"{page.name}: TeX math needs MathJax"


def test_ci_runs_the_exhaustive_checks_in_a_step_of_their_own() -> None:
    """The tests the default run deselects (``exhaustive``) still run in CI: .ci/run has a pytest step
    with ``--exhaustive`` selecting exactly them, after README command 2, and the realworld tests
    (skipped by README command 2 without their extra) with them, after the extra's install."""
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    steps = [i for i, line in enumerate(ci) if "pytest" in line and "--exhaustive" in line]
    assert steps, ".ci/run never runs the tests marked exhaustive"
    readme_suite = next(i for i, line in enumerate(ci) if line.endswith("python -m pytest -q -n auto"))
    realworld_install = next(i for i, line in enumerate(ci) if "pip install" in line and "realworld" in line)
    for i in steps:
        assert i > readme_suite and i > realworld_install
        assert re.search(r'-m "exhaustive or realworld" .*tests/realworld', ci[i]), ci[i]


@pytest.mark.parametrize("package", ["rulescore", "zygotepy", "rulescore.testing"])
def test_api_reference_parses_every_example_as_code(package: str) -> None:
    """With the docs build's griffe extension, each docstring's ``Example:`` (modules' too) is a
    Google-style examples section, which mkdocstrings renders as code, not as nested block quotes."""
    griffe = pytest.importorskip("griffe", reason="the API reference is built with the docs extra")
    extensions = griffe.load_extensions("tools/griffe_examples.py:SphinxDocstrings")
    root = griffe.load(package, extensions=extensions, search_paths=[str(ROOT)], docstring_parser="google")
    stack, checked = [root], 0
    while stack:
        obj = stack.pop()
        stack.extend(m for m in obj.members.values() if not m.is_alias)
        if obj.docstring is None or ">>>" not in obj.docstring.value:
            continue
        kinds = {section.kind.value for section in obj.docstring.parsed}
        assert "examples" in kinds, f"{obj.path}: its doctest would render as block quotes ({kinds})"
        checked += 1
    assert checked > 5
