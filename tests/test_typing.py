"""Type checkers resolve the installed packages: a user's file importing rulescore and zygotepy,
outside the repository, type-checks under ``mypy --strict`` (this also holds for the editable
install of the README, which is a plain path entry: see ``[tool.setuptools]`` in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

USER_FILE = '''\
import numpy as np
import rulescore as rc
import zygotepy as zp


def loss(p: dict[str, np.ndarray]) -> float:
    return float(np.sum(p["w"] ** 2))


params = {"w": np.ones(2)}
grads = zp.gradient(loss, params)
params = rc.tree_map(lambda p, g: p - 0.1 * g, params, grads[0])
'''


def test_mypy_resolves_both_packages_from_outside_the_repository(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy is in the dev extra")
    (tmp_path / "user.py").write_text(USER_FILE)
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--python-executable", sys.executable,
         "user.py"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Success" in run.stdout
