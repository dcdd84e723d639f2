"""docs/rules.md is the coverage table generated from the registry, and is up to date.

The table is generated in a fresh interpreter: rules registered by other tests in this process
(test-local callables, extra signatures for library callables) must not leak into it.
"""

from __future__ import annotations

import difflib
import subprocess
import sys
from pathlib import Path

from rulescore.rules._table import COMMAND

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "rules.md"
#: Where the differentiation sweep's part of the page begins (bench/sweep.py writes it; its own
#: test, tests/zygotepy/test_sweep.py, checks it).
SWEEP = "<!-- sweep:"


def _generate() -> str:
    done = subprocess.run([sys.executable, "-m", "rulescore.rules._table"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, f"the generator failed:\n{done.stderr}"
    return done.stdout


def test_generated_table_is_deterministic_complete_and_in_the_docs() -> None:
    """One test (the generator runs in a fresh interpreter, 3-4 s each): two runs agree, every family
    has its section, and docs/rules.md holds the same table."""
    fresh = _generate()
    assert fresh == _generate()
    for section in ("operators", "math", "builtins", "ufuncs", "reductions", "shape", "indexing",
                    "linalg", "fft"):
        assert f"\n## {section}\n" in fresh
    assert "| numpy.sin | yes | yes | any | rule |" in fresh
    assert "| operator.getitem | yes | yes | (str or bytes or range, ...) | non_differentiable |" in fresh
    current = DOC.read_text() if DOC.exists() else ""
    current = current.split(SWEEP, 1)[0].rstrip("\n") + "\n"
    if current != fresh:
        diff = "".join(difflib.unified_diff(current.splitlines(True), fresh.splitlines(True),
                                            "docs/rules.md", "generated", n=1))
        lines = diff.splitlines()
        more = f"\n... ({len(lines) - 60} more diff lines)" if len(lines) > 60 else ""
        shown = "\n".join(lines[:60]) + more
        raise AssertionError(f"docs/rules.md is out of date with the rule registry; regenerate it with\n\n"
                             f"    {COMMAND} && python bench/sweep.py --write\n\n(from the repository "
                             f"root; the second command adds the differentiation sweep)\n{shown}")
