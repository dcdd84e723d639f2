"""autograd's coverage, matched: every function HIPS autograd registers a gradient for (its
``primitive_vjps`` registry, read after importing ``autograd.numpy`` and every ``autograd.scipy``
module) differentiates here, with zygotepy, to autograd's answer.

Nothing here lists autograd's functions by hand. For each registered primitive wrapping a public
NumPy or SciPy callable, the test tries a fixed sequence of argument patterns (one array, two
arrays, a matrix, an array and an integer, ...; :data:`PATTERNS`) and uses the first one
autograd itself evaluates and differentiates to finite values. It then differentiates the same
loss (a weighted sum of squares of every output) with ``zp.gradient`` with respect to every
argument autograd has a VJP for, and compares; where they disagree, central finite
differences decide (autograd is not always right). A primitive no pattern fits is checked
against the rulescore registry instead (it must have a rule). :data:`NOT_YET` lists the
primitives without a rule here yet, each with the reason (strict xfails).
"""

from __future__ import annotations

import importlib
import pkgutil
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import rulescore as rc

autograd = pytest.importorskip("autograd")
pytest.importorskip("scipy")
autograd_scipy = pytest.importorskip("autograd.scipy")
import autograd.numpy as anp  # noqa: E402
from autograd.core import primitive_vjps  # noqa: E402

import zygotepy as zp  # noqa: E402

for _info in pkgutil.walk_packages(autograd_scipy.__path__, "autograd.scipy."):
    importlib.import_module(_info.name)

#: autograd's own plumbing (boxes, containers, adjoint helpers): not NumPy or SciPy functions.
INTERNAL_MODULES = ("autograd.",)


def _qualified(f: Any) -> str:
    owner = getattr(f, "__self__", None)
    if owner is not None and not isinstance(owner, type) and not isinstance(owner, np.ufunc):
        owner_name = getattr(owner, "name", None) or type(owner).__name__
        return f"scipy.stats.{owner_name}.{f.__name__}"
    if isinstance(f, np.ufunc):
        module = "scipy.special" if f.__name__ not in dir(np) else "numpy"
        return f"{module}.{f.__name__}"
    return f"{getattr(f, '__module__', '?')}.{getattr(f, '__name__', repr(f))}"


def autograd_primitives() -> list[tuple[str, Any, Any]]:
    """(name, wrapped NumPy/SciPy callable, autograd's primitive) for every registered primitive."""
    out = {}
    for prim in primitive_vjps:
        f = getattr(prim, "fun", None)
        module = getattr(f, "__module__", None) or ""
        if f is None or module.startswith(INTERNAL_MODULES) or getattr(f, "__name__", "").startswith("_"):
            continue
        name = _qualified(f)
        out[name] = (name, f, prim)
    return sorted(out.values(), key=lambda t: t[0])


PRIMITIVES = autograd_primitives()

# argument patterns, tried in order -------------------------------------------------------------
_RNG = np.random.default_rng(0)
_V = np.array([0.3, 0.55, 0.7, 0.45])
_W = np.array([1.3, 1.7, 1.45, 1.2])
_M = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, 0.2], [0.1, 0.2, 1.8]])  # SPD, distinct eigenvalues
_M2 = np.array([[0.5, -0.2, 0.3], [0.1, 0.9, -0.4], [0.2, 0.3, 0.7]])
_L = np.tril(_M)
_X2 = np.array([[0.3, 0.5, 0.8], [0.45, 0.2, 0.65]])
_SIMPLEX = np.array([0.2, 0.3, 0.5])

#: Candidate argument tuples. Floats are differentiable, ints/tuples/strings are not.
PATTERNS: list[tuple[Any, ...]] = [
    (_V,), (_W,), (_M,), (_X2,), (_V, _W), (_M, _M2), (_M, _V[:3]), (_L, _V[:3]),
    (_V, 2), (_X2, 1), (_X2, 0, 1), (_V, (2, 2)), (_X2, (3, 2)), (_X2, 2), (_M, _M2, _M),
    (2, _W), (1.5, _V), (_V, 0.5, 1.2), (_V, 2.0, 0.5, 1.5), (_V, 2.5, 1.5), (_V, 3.0),
    (_SIMPLEX, np.array([1.5, 2.0, 2.5])), (_V[:3], _V[:3] * 0.9, _M), (_V[:3], _V[:3] * 0.9),
    ((3,), 0.7), (0.2, 0.9, 4), (_V > 0.4, _V, _W), (_V, 0.4, 0.6), ("ij->ji", _X2), ("i,i->", _V, _W),
    (np.array([[0.2, 0.8], [0.6, 0.3]]),),
]


def _outputs(y: Any) -> list[Any]:
    if isinstance(y, (tuple, list)) or type(y).__name__ == "SequenceBox":
        return [o for v in y for o in _outputs(v)]
    return [y]


def _loss(ns: Any, f: Any, args: tuple[Any, ...]) -> Any:
    """A weighted sum of the squared (absolute) outputs: invariant to the signs and phases of
    eigenvectors and singular vectors, non-zero for every differentiable output."""
    total = 0.0
    for o in _outputs(f(*args)):
        if getattr(o, "dtype", np.dtype(float)).kind not in "fc" and not isinstance(o, float):
            continue
        size = int(np.size(o))
        w = np.reshape(np.cos(np.arange(size) + 0.5), np.shape(o))
        total = total + ns.sum(w * ns.real(o * ns.conj(o)))
    return total


def _float_positions(args: tuple[Any, ...]) -> list[int]:
    return [i for i, a in enumerate(args)
            if isinstance(a, (float, np.ndarray)) and np.asarray(a).dtype.kind == "f"]


def _autograd_grad(prim: Any, args: tuple[Any, ...], i: int) -> Any:
    """autograd's gradient of the loss in argument ``i`` (None where it has no VJP for it)."""
    try:
        g = autograd.grad(lambda v: _loss(anp, prim, args[:i] + (v,) + args[i + 1:]))(args[i])
    except NotImplementedError:
        return None
    return np.asarray(g)


def _autograd_answer(prim: Any, args: tuple[Any, ...]) -> dict[int, Any] | None:
    """autograd's gradient of the loss for each argument it differentiates, or None if autograd
    cannot evaluate this pattern (to finite values) or differentiates none of its arguments."""
    out = {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if not np.isfinite(_loss(np, prim.fun, args)):
                return None
            for i in _float_positions(args):
                g = _autograd_grad(prim, args, i)
                if g is not None and not np.all(np.isfinite(g)):
                    return None
                if g is not None:
                    out[i] = g
    except Exception:  # noqa: BLE001 - this pattern does not fit the function: try the next
        return None
    return out or None


def first_pattern(prim: Any) -> tuple[tuple[Any, ...], dict[int, Any]] | None:
    """The first of :data:`PATTERNS` autograd evaluates and differentiates, with its answer."""
    for args in PATTERNS:
        answer = _autograd_answer(prim, args)
        if answer is not None:
            return args, answer
    return None


def _fd(f: Callable[..., Any], args: tuple[Any, ...], i: int, h: float = 1e-6) -> Any:
    x = np.asarray(args[i], dtype=float)
    g = np.zeros_like(x)
    for j in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[j] = h
        plus = f(*args[:i], (x + e) if x.ndim else float(x + e), *args[i + 1:])
        minus = f(*args[:i], (x - e) if x.ndim else float(x - e), *args[i + 1:])
        g[j] = (plus - minus) / (2 * h)
    return g





#: autograd primitives without a rule here yet, each with the reason (strict xfail: remove the
#: entry when the rule lands).
NOT_YET: dict[str, str] = {
    "scipy.integrate._odepack_py.odeint": "odeint's adjoint rule is being written (issue 16, scipy-more)",
}


def _registered(f: Any) -> bool:
    owner = getattr(f, "__self__", None)
    if owner is not None and not isinstance(owner, (type, np.ufunc)):  # a distribution's method
        return bool(rc.rrule.rules_for(f))
    return rc.rrule.has_rules(f)


def _zygotepy_gradients(f: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grads = zp.gradient(lambda *a: _loss(np, f, a), *args)
    return tuple(np.zeros(np.shape(a)) if g is None else np.asarray(g)
                 for g, a in zip(grads, args, strict=True))


@pytest.mark.parametrize(("name", "f", "prim"), PRIMITIVES, ids=[p[0] for p in PRIMITIVES])
def test_autograd_primitive_differentiates_here(name: str, f: Any, prim: Any) -> None:
    if name in NOT_YET:
        pytest.xfail(NOT_YET[name])
    found = first_pattern(prim)
    if found is None:  # no argument pattern fits: the rule must at least be registered
        assert _registered(f), f"{name}: autograd differentiates it; rulescore has no rule"
        return
    args, answer = found
    grads = _zygotepy_gradients(f, args)
    for i, expected in answer.items():
        if np.allclose(grads[i], expected, rtol=1e-5, atol=1e-7):
            continue
        # they disagree: finite differences decide (autograd is not always right)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fd = _fd(lambda *a: float(_loss(np, f, a)), args, i)
        np.testing.assert_allclose(grads[i], fd, rtol=1e-4, atol=1e-6,
                                   err_msg=f"{name}, argument {i}: zygotepy disagrees with autograd "
                                           f"({expected!r}) and with finite differences")


def test_the_registry_was_read() -> None:
    """The enumeration sees autograd's NumPy, linalg, FFT and SciPy primitives."""
    names = {p[0] for p in PRIMITIVES}
    assert len(names) > 150
    assert {"numpy.sin", "numpy.linalg.solve", "numpy.fft.fft", "scipy.special.gammaln"} <= names
