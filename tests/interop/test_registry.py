"""Every rule of the library through the JAX, PyTorch and autograd exporters, on the registry's own test
cases (every ``CASES`` table of ``tests/rulescore/rules``): first order, and second order for the
element-wise, reduction, contraction and linear-algebra families.

Each check is :func:`rulescore.testing.check_systems`: the exporter's vjp against finite
differences of ``f`` (NumPy), and the exporter's vjp of its vjp against finite differences of
rulescore's own pullback (NumPy): one exporter call per order. The default run checks the first
case of each family through each exporter; ``--exhaustive`` (a step of its own in ``.ci/run``)
adds a fixed one in :data:`SAMPLE` of the others (the whole registry takes tens of minutes);
``RULESCORE_INTEROP_REGISTRY=all`` with ``--exhaustive`` runs every case.
``RULESCORE_INTEROP_EXAMPLES`` sets the hypothesis examples per case (default 1).
Every case passes through every exporter: no case is listed as a known failure.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import rulescore.testing as rct
from rulescore.rules import FAMILIES as LIBRARY_FAMILIES
from rulescore.testing import no_tangent
from tests.rulescore.rules._cases import RuleCase, broken_reduce, case_id

EXPORTERS = ("jax", "torch", "autograd")
SYSTEMS = [s for s in EXPORTERS if s in rct.installed_systems()]
_RULES = Path(__file__).parents[1] / "rulescore" / "rules"
#: the library's families and scipy's (registered when scipy is imported: the test extra has it)
FAMILIES = sorted(p.stem.removeprefix("test_") for p in _RULES.glob("test_*.py")
                  if p.stem.removeprefix("test_") in LIBRARY_FAMILIES or p.stem.startswith("test_scipy_"))
#: families whose second derivatives are checked
SECOND_ORDER = {"ufuncs", "reductions", "contractions", "linalg"}
EXAMPLES = int(os.environ.get("RULESCORE_INTEROP_EXAMPLES", "1"))
#: one case in SAMPLE per family runs by default (besides the first); all with the variable set
SAMPLE = 1 if os.environ.get("RULESCORE_INTEROP_REGISTRY") == "all" else 6

#: ``system-family-case`` -> why that exporter cannot do it (run, expected to fail with a raised
#: error, never a wrong number). Output specs come from the actual inputs, Python scalars stay
#: weakly typed and dataclasses are flattened, so every other rule goes through both exporters.
def _cases() -> list[Any]:
    params = []
    for family in FAMILIES:
        module = importlib.import_module(f"tests.rulescore.rules.test_{family}")
        for k, case in enumerate(module.CASES):
            if k % SAMPLE:
                continue
            marks = [] if k == 0 else [pytest.mark.exhaustive]
            for system in EXPORTERS:
                params.append(pytest.param(family, case, system, id=f"{system}-{family}-{case_id(case)}",
                                           marks=marks))
    return params


@pytest.mark.parametrize(("family", "case", "system"), _cases())
def test_rule_through_exporter(family: str, case: RuleCase, system: str) -> None:
    if system not in SYSTEMS:
        pytest.skip(f"{system} is not installed (the test extra installs it)")
    if broken_reduce(case):
        pytest.skip("NumPy computes this reduce wrongly on this CPU: its rules refuse it "
                    "(tests/rulescore/rules/test_ufunc_methods.py)")
    strategies = st.tuples(*(a if isinstance(a, st.SearchStrategy) else st.just(a) for a in case.args))

    @settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck),
              phases=(Phase.explicit, Phase.generate))  # no shrinking: a failure shows its example
    @given(strategies)
    def check(drawn: tuple[Any, ...]) -> None:
        marked = tuple(no_tangent(a) if i in case.nondiff else a for i, a in enumerate(drawn))
        options = {k: v for k, v in (("rtol", case.rtol), ("atol", case.atol)) if v is not None}
        rct.check_systems(case.f, marked, case.kwargs, [system], second_order=family in SECOND_ORDER,
                          **options)

    check()
