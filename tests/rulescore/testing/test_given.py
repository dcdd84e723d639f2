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
