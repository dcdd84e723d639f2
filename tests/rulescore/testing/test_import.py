"""``import rulescore.testing`` without hypothesis names the extra that installs it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

#: runs in a fresh interpreter where ``import hypothesis`` (or another module) fails as if absent
BLOCKED_IMPORT = textwrap.dedent("""
    import importlib.abc, sys
    class Absent(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == {blocked!r}:
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
    sys.meta_path.insert(0, Absent())
    import rulescore
    try:
        import rulescore.testing
    except ImportError as error:
        print(type(error).__name__, error.name, "|", error)
    else:
        print("imported")
""")


def _import_without(blocked: str) -> str:
    result = subprocess.run([sys.executable, "-c", BLOCKED_IMPORT.format(blocked=blocked)], cwd=ROOT,
                            capture_output=True, text=True, timeout=120, check=True)
    return result.stdout.strip()


def test_missing_hypothesis_names_the_testing_extra() -> None:
    out = _import_without("hypothesis")
    assert out.startswith("ModuleNotFoundError hypothesis |"), out
    assert "pip install 'rulescore[testing]'" in out and "hypothesis" in out.split("|")[1]


def test_a_module_hypothesis_needs_is_reported_as_itself() -> None:
    """Hypothesis installed but broken (its dependency missing): the real error, not the extra's advice."""
    out = _import_without("sortedcontainers")
    assert out.startswith("ModuleNotFoundError sortedcontainers |") and "rulescore[testing]" not in out, out


def test_modules_rulescore_testing_does_not_need_may_be_absent() -> None:
    assert _import_without("scipy") == "imported"
