"""rulescore.testing.plugin, in a separate pytest process."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import rulescore as rc

# ---------------------------------------------------------------------------------------------
# the pytest plugin, in a separate pytest process


def test_plugin_gives_fixtures_profile_and_checking_mode(tmp_path: Path) -> None:
    (tmp_path / "test_third_party.py").write_text(textwrap.dedent('''
        import numpy as np
        import rulescore as rc
        from hypothesis import settings

        def triple(x):
            return 3.0 * x

        rc.scalar_rule(triple, lambda x: 3.0)

        def test_rule(rule_tester):
            rule_tester.both(triple, np.array([1.0, 2.0]))
            rule_tester.given(triple, np.array([0.5]))

        def test_environment():
            assert rc.checks_enabled()
            assert settings.default.derandomize and settings.default.deadline is None
    '''))
    env = {**os.environ, "PYTHONPATH": str(Path(rc.__file__).parent.parent)}
    env.pop("RULESCORE_CHECKS", None)
    installed = any(ep.value == "rulescore.testing.plugin"
                    for ep in importlib.metadata.entry_points(group="pytest11"))
    enable = [] if installed else ["-p", "rulescore.testing.plugin"]  # source checkout: by hand
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *enable, "-p", "no:cacheprovider", "-p", "no:randomly",
         str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout
