"""A declared positional form (rulescore.declare_parameters) is that of a callable's rules: a
traced keyword-only argument is bound into its slot for the rule, and the callable itself is
still called as the user wrote it when no rule applies (the engine then differentiates its
source)."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rulescore as rc
import zygotepy as zp
from tests.zygotepy.finite_differences import fd

P = inspect.Parameter
ROOT = Path(__file__).resolve().parents[2]


def spread(x: Any, *, width: Any = 1.0) -> Any:
    return np.sum(np.exp(-((x / width) ** 2)))


def spread_rrule(x: float, *given: Any, **kwargs: Any) -> Any:
    width = given[0] if given else kwargs.get("width", 1.0)
    e = np.exp(-((x / width) ** 2))

    def spread_pullback(ybar: Any) -> Any:
        widthbar = ybar * e * 2 * x ** 2 / width ** 3
        return rc.NoTangent(), ybar * e * (-2 * x / width ** 2), *(widthbar for _ in given)

    return spread(x, width=width), spread_pullback


rc.declare_parameters(spread, inspect.Signature(
    [P("x", P.POSITIONAL_OR_KEYWORD), P("width", P.POSITIONAL_OR_KEYWORD, default=1.0)]))
rc.rrule.register(spread, float)(spread_rrule)  # floats only: arrays go through the source


def test_a_traced_keyword_only_argument_reaches_the_rule_in_its_declared_slot() -> None:
    def f(w: float) -> Any:
        return spread(0.8, width=w)

    with rc.checking():
        (g,) = zp.gradient(f, 1.5)
    np.testing.assert_allclose(g, fd(f, 1.5), rtol=1e-7)


def test_without_a_rule_the_callable_is_called_as_written() -> None:
    x = np.array([0.8, -0.3])

    def f(w: float) -> Any:
        return spread(x, width=w)  # no rule for an array: differentiated through spread's source

    (g,) = zp.gradient(f, 1.5)
    np.testing.assert_allclose(g, fd(f, 1.5), rtol=1e-7)


@settings(max_examples=25, deadline=None)
@given(st.floats(-0.9, -0.1), st.floats(0.1, 0.9), st.sampled_from(["min", "max", "both"]))
def test_np_clip_min_and_max_aliases_get_their_cotangents(lo: float, hi: float, given_as: str) -> None:
    """NumPy 2.1's keyword-only ``min=``/``max=`` of ``np.clip`` are declared in its rules' form
    (a_min, a_max, out, min, max): traced, they differentiate like ``a_min``/``a_max``, in both
    modes."""
    x = np.array([-1.0, -0.05, 0.05, 1.0])  # two entries beyond the bounds, two inside
    keywords = {"min": ("min",), "max": ("max",), "both": ("min", "max")}[given_as]

    def f(lo: float, hi: float) -> Any:
        bounds = {"min": lo, "max": hi}
        return np.sum(np.clip(x, **{k: bounds[k] for k in keywords}) * x)

    grads = zp.gradient(f, lo, hi)  # an unused bound's gradient is None (nothing flows to it)
    for name, g, want in (("min", grads[0], fd(lambda a: f(a, hi), lo)),
                          ("max", grads[1], fd(lambda b: f(lo, b), hi))):
        if name in keywords:
            np.testing.assert_allclose(g, want, atol=1e-7)
        else:
            assert g is None
    _, tangent = zp.jvp(f, (lo, hi), (1.0, 1.0))
    np.testing.assert_allclose(tangent, sum(g for g in grads if g is not None), atol=1e-7)


FIRST_CALLS = {
    "clip_min": "lambda c: np.sum(np.clip(x, min=c) * x)",
    "clip_max": "lambda c: np.sum(np.clip(x, max=c) * x)",
    "pad_constant_values": "lambda c: np.sum(np.pad(x, 2, constant_values=c) ** 2)",
    "simpson_x": "lambda c: si.simpson(x ** 2, x=np.linspace(0.0, c, 4))",
}


@pytest.mark.parametrize("mode", ["gradient", "jvp"])
@pytest.mark.parametrize("case", list(FIRST_CALLS))
def test_a_declared_form_applies_at_the_first_call_of_a_fresh_process(case, mode):
    """Rule families register on the first call that needs them, and a family declares its
    callables' positional forms as it loads: a traced keyword is bound into its slot at that very
    first call (in a fresh process), not only once some earlier call loaded the family."""
    program = textwrap.dedent(f"""
        import numpy as np, scipy.integrate as si, zygotepy as zp
        x = np.array([-1.0, -0.05, 0.05, 1.0])
        f = {FIRST_CALLS[case]}
        c, h = 0.4, 1e-6
        got = zp.gradient(f, c)[0] if {mode!r} == "gradient" else zp.jvp(f, (c,), (1.0,))[1]
        want = (f(c + h) - f(c - h)) / (2 * h)
        assert abs(got - want) <= 1e-6 * max(1.0, abs(want)), (got, want)
    """)
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr[-2000:]
