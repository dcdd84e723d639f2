"""Rules of the library through the JAX and PyTorch exporters, on the registry's own test cases
(``tests/rulescore/rules``): first order, and second order for the element-wise, reduction,
contraction and linear-algebra families. By default the first cases of each family run;
``RULESCORE_INTEROP_REGISTRY=all`` runs every case (about 2,700 checks: too slow for the default
suite today)."""

from __future__ import annotations

import importlib
import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rulescore.testing as rct
from rulescore.testing import no_tangent
from tests.rulescore.rules._cases import RuleCase, case_id

SYSTEMS = [s for s in ("jax", "torch") if s in rct.installed_systems()]
FAMILIES = ("builtins", "fft", "indexing", "linalg", "math", "operators", "reductions", "shape", "ufuncs")
#: families whose second derivatives are checked (contractions live in linalg)
SECOND_ORDER = {"ufuncs", "reductions", "linalg"}
EXAMPLES = int(os.environ.get("RULESCORE_INTEROP_EXAMPLES", "1"))
#: cases per family run by default; RULESCORE_INTEROP_REGISTRY=all runs every case (slow: seconds a case)
PER_FAMILY = os.environ.get("RULESCORE_INTEROP_REGISTRY", "1")


def _cases() -> list[Any]:
    params = []
    for family in FAMILIES:
        module = importlib.import_module(f"tests.rulescore.rules.test_{family}")
        cases = module.CASES if PER_FAMILY == "all" else module.CASES[: int(PER_FAMILY)]
        for case in cases:
            for system in ("jax", "torch"):
                params.append(pytest.param(family, case, system, id=f"{system}-{family}-{case_id(case)}"))
    return params


@pytest.mark.parametrize(("family", "case", "system"), _cases())
def test_rule_through_exporter(family: str, case: RuleCase, system: str) -> None:
    if system not in SYSTEMS:
        pytest.skip(f"{system} is not installed (the test extra installs it)")
    strategies = st.tuples(*(a if isinstance(a, st.SearchStrategy) else st.just(a) for a in case.args))

    @settings(max_examples=EXAMPLES, deadline=None, database=None)
    @given(strategies)
    def check(drawn: tuple[Any, ...]) -> None:
        marked = tuple(no_tangent(a) if i in case.nondiff else a for i, a in enumerate(drawn))
        rct.check_systems(case.f, marked, case.kwargs, [system], second_order=family in SECOND_ORDER,
                          **{k: v for k, v in (("rtol", case.rtol), ("atol", case.atol)) if v is not None})

    check()
