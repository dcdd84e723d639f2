"""Rules for the standard library's ``statistics`` (rulescore/rules/stdlib_statistics.py):
each function on lists, tuples and arrays against finite differences, with a given centre,
and through zygotepy in both modes and to second order."""

from __future__ import annotations

import statistics
from typing import Any

import numpy as np
import pytest
from hypothesis import strategies as st

import rulescore as rc
import rulescore.testing.strategies as S
import zygotepy as zp
from rulescore.rules import stdlib_statistics
from tests.rulescore.rules._cases import RuleCase, case_id, check_case
from tests.zygotepy.finite_differences import fd

N = 4
# distinct entries (median's sort is then smooth), at least two (variance needs them)
FLOATS = st.lists(st.floats(-3.0, 3.0), min_size=2, max_size=5, unique=True).filter(
    lambda xs: min(abs(a - b) for i, a in enumerate(xs) for b in xs[i + 1:]) > 1e-3)


def _cases() -> list[RuleCase]:
    out = [RuleCase(statistics.mean, (FLOATS,), max_examples=N),
           RuleCase(statistics.mean, (FLOATS.map(tuple),), name="tuple", max_examples=N),
           RuleCase(statistics.mean, (S.arrays(shape=(4,)),), name="array", max_examples=N),
           RuleCase(statistics.median, (FLOATS,), max_examples=N),
           RuleCase(statistics.median, (FLOATS.map(lambda xs: xs[:3]),), name="odd", max_examples=N)]
    for f in (statistics.variance, statistics.pvariance, statistics.stdev, statistics.pstdev):
        out += [RuleCase(f, (FLOATS,), max_examples=N),
                RuleCase(f, (FLOATS, S.scalars()), name="given-centre", max_examples=N),
                RuleCase(f, (S.arrays(shape=(3,)).map(lambda a: a + np.arange(3.0) * 7),), name="array",
                         max_examples=N)]
    return out


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


def test_every_rule_of_the_family_has_a_case() -> None:
    assert {id(p.primal) for p in stdlib_statistics.RULES} <= {id(c.f) for c in CASES}


def summary(t: np.ndarray) -> Any:
    """Descriptive statistics of values computed from parameters, as analysis code writes them."""
    xs = [t[0], t[1] ** 2, t[0] * t[1], 2.0, np.sin(t[1])]
    centre = statistics.fmean(xs)
    return (statistics.mean(xs) + statistics.stdev(xs) + statistics.pvariance(xs, mu=centre)
            + statistics.variance(xs) ** 2 + statistics.pstdev(tuple(xs)) * statistics.median(xs))


def test_through_zygotepy_both_modes_and_second_order() -> None:
    theta = np.array([0.8, -1.3])
    want = fd(summary, theta)
    np.testing.assert_allclose(zp.gradient(summary, theta)[0], want, rtol=1e-6, atol=1e-8)
    direction = np.array([0.6, 1.4])
    np.testing.assert_allclose(zp.jvp(summary, (theta,), (direction,))[1], want @ direction, rtol=1e-6)
    rows = np.array([fd(lambda v, i=i: zp.gradient(summary, v)[0][i], theta) for i in range(2)])
    np.testing.assert_allclose(zp.hessian(summary, theta), rows, rtol=1e-5, atol=1e-6)


def test_values_are_the_exact_ones_of_statistics() -> None:
    data = [0.1, 0.2, 0.3, 1e16]
    assert rc.rrule(statistics.variance, data)[0] == statistics.variance(data)


def test_an_iterator_is_read_once() -> None:
    """The rules read their data once: an iterator gives the same value as a list (and no
    tangent, since it holds none)."""
    for f in (statistics.mean, statistics.median, statistics.variance, statistics.pstdev):
        y, back = rc.rrule(f, iter([1.0, 2.0, 6.0]))
        assert y == f([1.0, 2.0, 6.0])
        assert isinstance(back(1.0)[1], rc.NoTangent)
