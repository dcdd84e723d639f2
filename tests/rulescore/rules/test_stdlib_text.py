"""Text from values needs no derivative: ``json.dumps``/``json.dump``, the logging calls
(rulescore/rules/stdlib_text.py), ``str.format`` and ``%``-formatting of strings
(rulescore/rules/builtins.py) give ``NoTangent`` and, inside a differentiated function, see the
plain values while the gradient flows on."""

from __future__ import annotations

import io
import json
import logging
from typing import Any

import numpy as np
import pytest

import rulescore.testing.strategies as S
import zygotepy as zp
from rulescore.rules import stdlib_text
from tests.rulescore.rules._cases import RuleCase, case_id, check_case

F = S.scalars()
LOGGER = logging.getLogger("tests.rulescore.rules.test_stdlib_text")

CASES = [
    RuleCase(json.dumps, (F,), max_examples=2),
    RuleCase(json.dumps, (S.arrays(shape=(2,)).map(list),), {"indent": 1}, name="list", max_examples=2),
    RuleCase(json.dump, (F, io.StringIO()), max_examples=2),
    RuleCase(str.format, ("{:.3f} {}", F, F), max_examples=2),
    RuleCase(str.__mod__, ("%.2f", F), max_examples=2),
    *(RuleCase(getattr(logging.Logger, level), (LOGGER, "loss %f", F), name="method", max_examples=1)
      for level in ("debug", "info", "warning", "error", "critical", "exception")),
    RuleCase(logging.Logger.log, (LOGGER, logging.INFO, "loss %f", F), name="method", max_examples=1),
    *(RuleCase(getattr(logging, level), ("loss %f", F), max_examples=1)
      for level in ("debug", "info", "warning", "error", "critical", "exception")),
    RuleCase(logging.log, (logging.DEBUG, "loss %f", F), max_examples=1),
    RuleCase(logging.LogRecord.getMessage, (logging.LogRecord("x", logging.INFO, "", 1, "%s", (1.0,), None),),
             max_examples=1),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


def test_every_rule_of_the_family_has_a_case() -> None:
    assert {id(p.primal) for p in stdlib_text.RULES} <= {id(c.f) for c in CASES}


def logged_loss(t: float) -> Any:
    """A loss that reports itself on its way out, as training code does."""
    loss = t ** 2 + np.sin(t)
    LOGGER.info("loss %f at %s", loss, [t])
    logging.debug("loss %.3f", loss)
    percent = "%.2f / %s" % (loss, t)  # noqa: UP031 (the formatting under test)
    report = str.format("{:.3f}", loss) + percent + json.dumps({"loss": float(loss)})
    assert report.startswith(f"{t ** 2 + np.sin(t):.3f}")
    return loss


def test_a_loss_formatted_logged_and_dumped_still_differentiates(caplog: Any) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER.name)
    want = 2 * 0.7 + np.cos(0.7)
    assert zp.gradient(logged_loss, 0.7)[0] == pytest.approx(want)
    assert zp.jvp(logged_loss, (0.7,), (1.0,))[1] == pytest.approx(want)
    assert f"loss {0.7 ** 2 + np.sin(0.7):f} at [0.7]" in caplog.text
