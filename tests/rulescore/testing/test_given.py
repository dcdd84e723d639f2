"""rulescore.testing._given: reports through hypothesis."""

from __future__ import annotations

from typing import Any

import pytest

import rulescore as rc
import rulescore.testing as rct
from rulescore.testing import strategies as S

# ---------------------------------------------------------------------------------------------
# reports through hypothesis


def wrong_cube(x: Any) -> Any:
    return x ** 3


rc.scalar_rule(wrong_cube, lambda x: 2 * x ** 2)


def test_check_rule_failures_carry_the_falsifying_example() -> None:
    with pytest.raises(AssertionError) as info:
        rct.check_rule(wrong_cube, (S.arrays(),), max_examples=10)
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "Falsifying example" in notes or "Failing test case" in notes  # hypothesis < / >= 6.16x
    assert "wrong_cube" in str(info.value) and "rrule for" in str(info.value)


# ---------------------------------------------------------------------------------------------
# nothing written outside the process


@pytest.mark.parametrize("call", [
    "rct.check_rule(np.tanh, (S.arrays(shape=(2,)),), max_examples=3)",
    "rct.check_rule(np.multiply, (S.arrays(shape=(2,)), 2.0), max_examples=3, frule=False)",
    "rct.RuleTester().given(np.sin, S.arrays(max_dims=1), max_examples=3)",
])
def test_checks_run_outside_pytest_leave_no_example_database_behind(tmp_path, call) -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    program = ("import numpy as np\nimport rulescore.testing as rct\n"
               f"from rulescore.testing import strategies as S\n{call}\n")
    done = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert not (tmp_path / ".hypothesis").exists()
