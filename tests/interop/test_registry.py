"""Every rule of the library through the JAX and PyTorch exporters, on the registry's own test
cases (every ``CASES`` table of ``tests/rulescore/rules``): first order, and second order for the
element-wise, reduction, contraction and linear-algebra families.

Each check is :func:`rulescore.testing.check_systems`: the exporter's vjp against finite
differences of ``f`` (NumPy), and the exporter's vjp of its vjp against finite differences of
rulescore's own pullback (NumPy): one exporter call per order. The suite runs the first case of
each family and a fixed one in :data:`SAMPLE` of the others (the whole registry takes tens of
minutes); ``RULESCORE_INTEROP_REGISTRY=all`` runs every case. ``RULESCORE_INTEROP_EXAMPLES`` sets
the hypothesis examples per case (default 1).

Cases that fail today are listed in :data:`KNOWN_FAILURES` with the reason (they run, marked
``xfail``): the open part of issue 15.
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
from tests.rulescore.rules._cases import RuleCase, case_id

SYSTEMS = [s for s in ("jax", "torch") if s in rct.installed_systems()]
_RULES = Path(__file__).parents[1] / "rulescore" / "rules"
#: the library's families and scipy's (registered when scipy is imported: the test extra has it)
FAMILIES = sorted(p.stem.removeprefix("test_") for p in _RULES.glob("test_*.py")
                  if p.stem.removeprefix("test_") in LIBRARY_FAMILIES or p.stem.startswith("test_scipy_"))
#: families whose second derivatives are checked
SECOND_ORDER = {"ufuncs", "reductions", "contractions", "linalg"}
EXAMPLES = int(os.environ.get("RULESCORE_INTEROP_EXAMPLES", "1"))
#: one case in SAMPLE per family runs by default (besides the first); all with the variable set
SAMPLE = 1 if os.environ.get("RULESCORE_INTEROP_REGISTRY") == "all" else 6

_DOMAIN = ("the exporter finds output shapes by calling f on arrays of ones or random values, outside "
           "this function's domain, and under jax.vjp / torch.func it does not use the actual inputs")
_STATIC = ("the argument is a container the exporters do not flatten (a tuple indexed by the rule, a "
           "dataclass): a static leaf, so it gets no gradient where the rule gives one")
_PROMOTION = ("a Python float argument becomes a float64 array at the boundary, so NumPy promotes a "
              "float32 result to float64")
#: ``system-family-case`` -> why it fails today (issue 15, left open): run, expected to fail.
KNOWN_FAILURES: dict[str, str] = {
    **{f"{s}-{case}": _DOMAIN for s in ("jax", "torch") for case in (
        "builtins-complex-complex-parts", "builtins-complex.conjugate-complex", "linalg-numpy.cholesky",
        "linalg-numpy.cholesky-upper", "linalg-numpy.cholesky-batched", "linalg-numpy.cholesky-float32",
        "math-math.log-base", "math-math.log-base-below-1", "scipy_linalg-scipy.solve-pos-lower",
        "scipy_special-scipy.multigammaln", "scipy_stats-scipy.multivariate_normal_gen.logpdf-cov",
        "scipy_stats-scipy.multivariate_normal_gen.pdf-cov", "indexing-rulescore.unindex-mask",
        "shape-numpy.RandomState.triangular-triangular", "shape-numpy.arange-start-stop-step")},
    "torch-builtins-float.conjugate-float": _DOMAIN,
    **{f"jax-indexing-getitem-{case}": "a boolean mask's output shape depends on its values; the example "
       "call on ones gives another shape" for case in ("bool-mask", "bool-rows", "mixed-mask", "complex")},
    **{f"{s}-indexing-{case}": _STATIC for s in ("jax", "torch") for case in (
        "getitem-tuple-int", "getitem-tuple-negative", "getattr-dataclass", "getattr-dataclass-float")},
    **{f"{s}-shape-{case}": _PROMOTION for s in ("jax", "torch")
       for case in ("numpy.where-broadcast", "numpy.clip-lower-only")},
    **{f"{s}-linalg-numpy.norm-complex-vector-{p}": "the exporters' gradient of a complex vector's 1- and "
       "3-norm disagrees with finite differences: not diagnosed yet"
       for s in ("jax", "torch") for p in (1, 3)},
    "jax-scipy_linalg-scipy.logm-spd": "the output spec found from the example call is complex (logm of "
                                       "ones), the function's output at an SPD matrix is real",
    "jax-scipy_linalg-scipy.sqrtm-spd": "fails under JAX: not diagnosed yet",
    "jax-numeric-numpy.real_if_close-complex": "the output dtype depends on the values (real when the "
                                               "imaginary parts are small): the spec found from an example "
                                               "call is real",
}


def _cases() -> list[Any]:
    params = []
    for family in FAMILIES:
        module = importlib.import_module(f"tests.rulescore.rules.test_{family}")
        for k, case in enumerate(module.CASES):
            if k % SAMPLE:
                continue
            for system in ("jax", "torch"):
                name = f"{system}-{family}-{case_id(case)}"
                known = KNOWN_FAILURES.get(name)
                marks = [pytest.mark.xfail(reason=known, strict=False)] if known else []
                params.append(pytest.param(family, case, system, id=name, marks=marks))
    return params


@pytest.mark.parametrize(("family", "case", "system"), _cases())
def test_rule_through_exporter(family: str, case: RuleCase, system: str) -> None:
    if system not in SYSTEMS:
        pytest.skip(f"{system} is not installed (the test extra installs it)")
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
