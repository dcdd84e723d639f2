"""Installing rulescore changes nothing in other projects: the pytest plugin is opt-in."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def test_no_pytest11_entry_point_loads_rulescore() -> None:
    values = [ep.value for ep in importlib.metadata.entry_points(group="pytest11")]
    assert not [v for v in values if v.startswith(("rulescore", "zygotepy"))], values


def test_rulescore_requires_only_numpy_and_typing_extensions() -> None:
    requires = importlib.metadata.requires("rulescore") or []
    runtime = {r.split(";")[0].split(">")[0].split("=")[0].strip() for r in requires if "extra ==" not in r}
    assert runtime == {"numpy", "typing-extensions"}


def test_zygotepy_registers_itself_as_an_engine() -> None:
    engines = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="rulescore.engines")}
    assert engines.get("zygotepy") == "zygotepy"
    assert "rulescore" in " ".join(importlib.metadata.requires("zygotepy") or [])


def test_an_unrelated_project_gets_no_profile_and_no_checking_mode(tmp_path: Path) -> None:
    (tmp_path / "test_unrelated.py").write_text(textwrap.dedent('''
        import os, sys

        def test_untouched():
            assert "RULESCORE_CHECKS" not in os.environ
            assert "rulescore" not in sys.modules and "zygotepy" not in sys.modules
            try:
                from hypothesis import settings
            except ImportError:
                return
            # hypothesis's own profile ("default", or "ci" when CI is set), never rulescore's
            assert settings._current_profile in ("default", "ci"), settings._current_profile
            assert settings.default.max_examples == 100
    '''))
    env = {k: v for k, v in os.environ.items() if k not in ("RULESCORE_CHECKS", "PYTEST_ADDOPTS")}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout


# -- which AD engine differentiates host rules -----------------------------------------------------------
class _EntryPoint:
    def __init__(self, name):
        self.name = name

    def load(self):
        return f"engine {self.name}"


@pytest.mark.parametrize("names", [("zygotepy", "another"), ("a", "b", "c")])
def test_several_engines_are_never_picked_silently(monkeypatch, names):
    from rulescore.interop import _host

    monkeypatch.setattr(_host.importlib.metadata, "entry_points",
                        lambda group: [_EntryPoint(n) for n in names])
    monkeypatch.delenv("RULESCORE_ENGINE", raising=False)
    _host.engine.cache_clear()
    try:
        with pytest.raises(_host.EngineMissingError, match="several AD engines.*RULESCORE_ENGINE"):
            _host.engine()
        for name in names:
            monkeypatch.setenv("RULESCORE_ENGINE", name)
            _host.engine.cache_clear()
            assert _host.engine() == f"engine {name}"
        monkeypatch.setenv("RULESCORE_ENGINE", "missing")
        _host.engine.cache_clear()
        with pytest.raises(_host.EngineMissingError, match="'missing' is not an installed AD engine"):
            _host.engine()
    finally:
        _host.engine.cache_clear()


def test_a_single_engine_is_used_without_being_named(monkeypatch):
    from rulescore.interop import _host

    monkeypatch.setattr(_host.importlib.metadata, "entry_points", lambda group: [_EntryPoint("only")])
    monkeypatch.delenv("RULESCORE_ENGINE", raising=False)
    _host.engine.cache_clear()
    try:
        assert _host.engine() == "engine only"
    finally:
        _host.engine.cache_clear()
