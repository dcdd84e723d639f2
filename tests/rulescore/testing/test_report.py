"""rulescore.testing._report: one AssertionError that lists every problem and the call."""

from __future__ import annotations

import numpy as np
import pytest

from rulescore.testing._report import _invoke, _Report


def test_a_report_lists_every_problem_with_the_call_and_the_arguments() -> None:
    report = _Report("rrule", np.sin, (np.ones(2),), {"axis": 0}, "<the rule>")
    report.fail("first problem")
    report.fail("second\nproblem")
    with pytest.raises(AssertionError) as err:
        report.finish()
    text = str(err.value)
    assert text.startswith("rrule failed for numpy.sin(ndarray[float64 (2,)]): 2 problems")
    assert "  1. first problem" in text and "  2. second\n     problem" in text
    assert "rule: <the rule>" in text and "keyword arguments: {'axis': 0}" in text


def test_a_report_without_problems_passes_and_an_exception_in_the_rule_is_reported() -> None:
    report = _Report("frule", abs, (1.0,), {}, "r")
    report.finish()
    with pytest.raises(AssertionError, match="the pullback raised ZeroDivisionError"):
        _invoke(report, "the pullback", lambda: 1 / 0)
