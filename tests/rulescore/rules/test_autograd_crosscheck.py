"""Cross-check the rule library against HIPS autograd.

For every ``RuleCase`` of every family test module (``test_<family>.py``) whose callable autograd
also implements (``numpy.X`` -> ``autograd.numpy.X``, ``numpy.linalg.X``/``numpy.fft.X`` -> the
same in ``autograd.numpy``, ``math.X`` -> its ``autograd.numpy`` (or ``autograd.scipy.special``)
equivalent, ``operator.X``/builtins/``getattr`` -> the callable itself on autograd's traced values,
``ndarray.X`` -> the method of autograd's ``ArrayBox`` where it has one; ``ADAPTERS`` and
``ALIASES`` cover NumPy callables that autograd differentiates under another signature or only
as a documented equivalent expression), this draws ``EXAMPLES`` arguments from the case's
strategies (hypothesis, derandomized), computes the vector-Jacobian product for a random output
cotangent with rulescore's rrule and with ``autograd.make_vjp``, and compares them with respect
to every argument the case does not mark ``nondiff`` that has real or complex degrees of freedom
(where autograd cannot differentiate all of them at once, one at a time).

Complex numbers: autograd's VJP is ``conj(pullback(conj(ybar)))`` in ChainRules' convention (for
holomorphic ``f``, autograd gives ``ybar * f'(z)`` where ChainRules gives ``ybar * conj(f'(z))``),
so autograd is called with ``conj(ybar)`` and its result conjugated. Functions of a Hermitian
matrix that read one triangle (``HERMITIAN_INPUT``) are compared on Hermitian perturbations.

Where the two disagree, finite differences (``rulescore.testing``) decide which is right, along
random directions: a draw where rulescore is wrong fails the case (list it in ``KNOWN_WRONG``, an
``xfail(strict=True)``, until the rule is fixed); a draw where autograd is wrong is recorded (and
reported by ``test_enough_callables_agree``); a draw where neither matches (the function is not
differentiable there) is ignored. A case agrees when at least one draw was compared and agreed
and rulescore was right on every draw; a case autograd cannot run is skipped with the reason.
``test_enough_callables_agree`` requires at least ``MIN_AGREEING`` distinct callables to agree
and prints them, the callables not cross-checked and where autograd is wrong (``pytest -s``).
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
import importlib
import math
import operator
import types
import warnings
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

import rulescore as rc
from rulescore.testing import FiniteDifferenceError, default_tolerance, no_tangent
from rulescore.testing._finite_differences import DEFAULT_FD, full_cotangent, make_problem
from rulescore.testing._vec import NoDiffNode, build_node, int_only

from ._cases import RuleCase, case_id

autograd = pytest.importorskip("autograd")
anp = pytest.importorskip("autograd.numpy")
ag_special = pytest.importorskip("autograd.scipy.special")
from autograd.numpy.numpy_boxes import ArrayBox  # noqa: E402

MIN_AGREEING = 200
EXAMPLES = 3  # arguments drawn per case (hypothesis, derandomized)

_HERE = Path(__file__).parent
FAMILY_MODULES = sorted(p.stem for p in _HERE.glob("test_*.py") if p.stem != Path(__file__).stem)


def _collect_cases() -> list[RuleCase]:
    cases: list[RuleCase] = []
    for name in FAMILY_MODULES:
        module = importlib.import_module(f"{__package__}.{name}")
        cases.extend(c for c in getattr(module, "CASES", ()) if isinstance(c, RuleCase))
    return cases


CASES = _collect_cases()


def _unique_ids(cases: list[RuleCase]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for c in cases:
        base = case_id(c)
        seen[base] = seen.get(base, 0) + 1
        out.append(base if seen[base] == 1 else f"{base}#{seen[base]}")
    return out


IDS = _unique_ids(CASES)

# --------------------------------------------------------------------------------------------
# the autograd counterpart of a callable


def _log(x: Any, *base: Any) -> Any:
    return anp.log(x) / anp.log(base[0]) if base else anp.log(x)


def _hypot(*xs: Any) -> Any:
    return anp.hypot(*xs) if len(xs) == 2 else anp.sqrt(builtins.sum(x * x for x in xs))


def _dist(p: Any, q: Any) -> Any:
    return anp.sqrt(builtins.sum((a - b) ** 2 for a, b in zip(p, q, strict=True)))


#: ``math`` functions and their autograd equivalents.
MATH: dict[Any, Any] = {
    math.sin: anp.sin, math.cos: anp.cos, math.tan: anp.tan, math.asin: anp.arcsin,
    math.acos: anp.arccos, math.atan: anp.arctan, math.sinh: anp.sinh, math.cosh: anp.cosh,
    math.tanh: anp.tanh, math.asinh: anp.arcsinh, math.acosh: anp.arccosh, math.atanh: anp.arctanh,
    math.exp: anp.exp, math.expm1: anp.expm1, math.log1p: anp.log1p, math.log2: anp.log2,
    math.log10: anp.log10, math.sqrt: anp.sqrt, math.fabs: anp.fabs, math.degrees: anp.degrees,
    math.radians: anp.radians, math.atan2: anp.arctan2, math.pow: anp.power, math.copysign: anp.copysign,
    math.fmod: anp.fmod, math.ldexp: anp.ldexp, math.log: _log, math.hypot: _hypot,
    math.erf: ag_special.erf, math.erfc: ag_special.erfc, math.gamma: ag_special.gamma,
    math.lgamma: ag_special.gammaln, math.floor: anp.floor, math.ceil: anp.ceil, math.trunc: anp.trunc,
    math.fsum: lambda xs: anp.sum(anp.array(list(xs))),
    math.prod: lambda xs, start=1: start * anp.prod(anp.array(list(xs))),
    math.dist: _dist,
}
if hasattr(math, "exp2"):
    MATH[math.exp2] = anp.exp2
if hasattr(math, "cbrt"):
    MATH[math.cbrt] = anp.cbrt

#: Builtins that work on autograd's traced values as they are.
BUILTINS = (builtins.abs, builtins.pow, builtins.sum, builtins.max, builtins.min, builtins.divmod,
            builtins.float, builtins.complex, builtins.round, builtins.getattr)


def _method(name: str) -> Any:
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(self, name)(*args, **kwargs)

    call.__name__ = f"ArrayBox.{name}"
    return call


def _pad(array: Any, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Any:
    return anp.pad(array, pad_width, mode, **kwargs)  # autograd's VJP needs the mode passed


def _clip(a: Any, a_min: Any = None, a_max: Any = None, *, min: Any = None, max: Any = None) -> Any:
    return anp.clip(a, min if a_min is None else a_min, max if a_max is None else a_max)  # NumPy 2 keywords


#: Adapters for calling conventions autograd does not share (same function, other signature).
ADAPTERS: dict[Any, Any] = {np.pad: _pad, np.clip: _clip}


def _last_two_first(x: Any) -> Any:
    return anp.moveaxis(anp.moveaxis(x, -2, 0), -1, 1)


def _la_trace(x: Any, offset: int = 0, dtype: Any = None) -> Any:
    return anp.trace(_last_two_first(x), offset)  # autograd's trace VJP assumes axes (0, 1)


def _la_diagonal(x: Any, offset: int = 0) -> Any:
    m, n = x.shape[-2:]
    i = np.arange(max(0, -offset), min(m, n - offset))
    return x[..., i, i + offset]


def _vector_norm(x: Any, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    assert not keepdims
    if axis is None:
        return anp.linalg.norm(anp.ravel(x), ord)
    axes = [a % x.ndim for a in ((axis,) if isinstance(axis, int) else axis)]
    moved = anp.moveaxis(x, axes, list(range(x.ndim - len(axes), x.ndim)))
    return anp.linalg.norm(anp.reshape(moved, moved.shape[:x.ndim - len(axes)] + (-1,)), ord, axis=-1)


def _matrix_power(a: Any, n: int) -> Any:
    if n == 0:
        return a * 0 + np.broadcast_to(np.eye(a.shape[-1]), a.shape)
    base = anp.linalg.inv(a) if n < 0 else a
    return functools.reduce(anp.matmul, [base] * abs(n))


def _take(a: Any, indices: Any, axis: int | None = None, mode: str = "raise") -> Any:
    n = a.size if axis is None else a.shape[axis]
    idx = np.asarray(indices)
    idx = np.clip(idx, 0, n - 1) if mode == "clip" else np.mod(idx, n) if mode == "wrap" else idx
    if axis is None:
        return anp.ravel(a)[idx]
    return a[(slice(None),) * (axis % a.ndim) + (idx,)]


def _flip(m: Any, axis: Any = None) -> Any:
    axes = range(m.ndim) if axis is None else [a % m.ndim for a in np.atleast_1d(axis)]
    return m[tuple(slice(None, None, -1) if k in axes else slice(None) for k in range(m.ndim))]


def _as_array(a: Any, dtype: Any = None, **kwargs: Any) -> Any:
    return anp.array(a) if dtype is None else anp.array(a).astype(dtype)


#: NumPy callables autograd has no VJP for, but whose computation NumPy documents as an
#: expression of functions autograd does differentiate (``np.linalg.matmul`` *is* ``np.matmul``
#: on the last two axes, ``np.vecdot(a, b)`` is ``sum(conj(a) * b, axis)``...). Cross-checked
#: through that expression; ``agreeing_callables`` reports them separately.
ALIASES: list[tuple[Any, Any]] = [
    (np.linalg.matmul, anp.matmul),
    (np.linalg.outer, anp.outer),
    (np.linalg.tensordot, lambda a, b, axes=2: anp.tensordot(a, b, axes)),
    (np.linalg.trace, _la_trace),
    (np.linalg.diagonal, _la_diagonal),
    (np.linalg.matrix_transpose, lambda x: anp.swapaxes(x, -1, -2)),
    (np.linalg.cross, lambda a, b, axis=-1: anp.cross(a, b, axis=axis)),
    (np.linalg.svdvals, lambda x: anp.linalg.svd(x, compute_uv=False)),
    (np.linalg.eigvalsh, lambda a, UPLO="L": anp.linalg.eigh(a, UPLO)[0]),
    (np.linalg.eigvals, lambda a: anp.linalg.eig(a)[0]),
    (np.linalg.vecdot, lambda a, b, axis=-1: anp.sum(anp.conj(a) * b, axis=axis)),
    (np.linalg.vector_norm, _vector_norm),
    (np.linalg.matrix_norm, lambda x, keepdims=False, ord="fro": anp.linalg.norm(x, ord, (-2, -1), keepdims)),
    (np.linalg.multi_dot, lambda arrays: functools.reduce(anp.dot, arrays)),
    (np.linalg.matrix_power, _matrix_power),
    (np.vdot, lambda a, b: anp.sum(anp.conj(anp.ravel(a)) * anp.ravel(b))),
    (np.take, _take),
    (np.flip, _flip),
    (np.diagflat, lambda v, k=0: anp.diag(anp.ravel(v), k)),
    (np.nansum, lambda a, axis=None, keepdims=False: anp.sum(anp.where(anp.isnan(a), 0.0, a), axis,
                                                             keepdims=keepdims)),
    (np.add.reduce, lambda a, axis=0, keepdims=False: anp.sum(a, axis=axis, keepdims=keepdims)),
    (np.copy, _as_array),
    (np.asarray, _as_array),
    (np.asanyarray, _as_array),
    (np.ascontiguousarray, _as_array),
]
for _name, _alias in {
    "vecdot": lambda a, b, axis=-1: anp.sum(anp.conj(a) * b, axis=axis),
    "matvec": lambda m, v: anp.matmul(m, v[..., None])[..., 0],
    "vecmat": lambda v, m: anp.matmul(anp.conj(v)[..., None, :], m)[..., 0, :],
}.items():
    if isinstance(getattr(np, _name, None), np.ufunc):  # NumPy 2
        ALIASES.append((getattr(np, _name), _alias))


def _alias_of(f: Any) -> Any:
    for g, alias in ALIASES:
        try:
            if f is g or (isinstance(f, types.BuiltinMethodType) and f == g):
                return alias
        except Exception:  # noqa: BLE001
            continue
    return None


def autograd_counterpart(f: Any) -> Any:
    """The autograd function that computes what ``f`` computes, or ``None``."""
    name = getattr(f, "__name__", None)
    if any(f is g for g in ADAPTERS):
        return ADAPTERS[f]
    alias = _alias_of(f)
    if alias is not None:
        return alias
    if name == "logsumexp" and (getattr(f, "__module__", "") or "").startswith("scipy.special"):
        return ag_special.logsumexp
    if isinstance(f, np.ufunc):
        return getattr(anp, f.__name__, None) if getattr(np, f.__name__, None) is f else None
    if isinstance(f, types.MethodDescriptorType) and getattr(f, "__objclass__", None) is np.ndarray:
        return _method(f.__name__) if hasattr(ArrayBox, f.__name__) else None
    if name is not None:
        for np_module, ag_module in ((np.linalg, anp.linalg), (np.fft, anp.fft), (np, anp)):
            if vars(np_module).get(name) is f and callable(vars(ag_module).get(name)):
                counterpart = getattr(ag_module, name)
                return None if counterpart is f else counterpart  # not wrapped: autograd cannot trace it
    try:
        if f in MATH:
            return MATH[f]
    except TypeError:
        return None
    if getattr(f, "__module__", None) in ("_operator", "operator") and vars(operator).get(name or "") is f:
        return f
    if any(f is b for b in BUILTINS):
        return f
    return None


# --------------------------------------------------------------------------------------------
# one comparison


@dataclasses.dataclass
class Outcome:
    """The result of cross-checking one case."""

    status: str  # agree | skip | rulescore_wrong | autograd_wrong
    reason: str = ""
    compared: int = 0  # examples compared
    nonzero: bool = False  # some compared cotangent was not zero
    details: list[str] = dataclasses.field(default_factory=list)


class _Skip(Exception):
    pass


_HEALTH = list(HealthCheck)


def _draw(case: RuleCase) -> list[tuple[Any, ...]]:
    strategies = st.tuples(*(a if isinstance(a, SearchStrategy) else st.just(a) for a in case.args))
    drawn: list[tuple[Any, ...]] = []

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              suppress_health_check=_HEALTH, phases=[Phase.generate])
    @given(strategies)
    def collect(args: tuple[Any, ...]) -> None:
        drawn.append(args)

    collect()
    return drawn


def _seed(text: str) -> int:
    return zlib.crc32(text.encode())


def _plain(t: Any, y: Any) -> Any:
    """The cotangent ``t`` of the output ``y`` (``Tangent[tuple]``, ``Tangent[EighResult]``...) as
    the plain structure autograd expects: a tuple for any tuple (NamedTuples included)."""
    if isinstance(y, (tuple, list)):
        if isinstance(t, rc.Tangent):
            fields = getattr(type(y), "_fields", None)
            entries = [dict(t.items())[k] for k in fields] if fields else list(t.backing)
        else:
            entries = list(t)
        return tuple(_plain(e, v) for e, v in zip(entries, y, strict=True))
    return t


def _conj(t: Any) -> Any:
    if isinstance(t, (tuple, list)):
        return type(t)(_conj(v) for v in t)
    if isinstance(t, dict):
        return {k: _conj(v) for k, v in t.items()}
    if isinstance(t, (complex, np.complexfloating)) or (isinstance(t, np.ndarray) and t.dtype.kind == "c"):
        return np.conj(t)
    return t


def _leaves_ok(y: Any, depth: int = 0) -> bool:
    """Every leaf of the output is a real or complex float (else: no random cotangent here)."""
    if isinstance(y, (tuple, list)) and depth < 4:
        return all(_leaves_ok(v, depth + 1) for v in y)
    if isinstance(y, (np.ndarray, np.generic)):
        return y.dtype.kind in "fc"
    return isinstance(y, (float, complex))


def _close(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any], rtol: float, atol: float,
           extra: np.ndarray[Any, Any] | float = 0.0) -> bool:
    scale = np.maximum(np.abs(a), np.abs(b))
    return bool(np.all(np.abs(a - b) <= atol + rtol * scale + extra))


def _hermitian_part(g: Any) -> Any:
    g = np.asarray(g)
    return (g + np.conj(np.swapaxes(g, -1, -2))) / 2


#: Functions of a symmetric (Hermitian) matrix that read only one triangle. The cotangent of the
#: raw array (what rulescore returns, and what finite differences of the NumPy call give) lives in
#: that triangle; autograd returns its Hermitian part (the gradient along symmetric perturbations).
#: Both are compared on Hermitian perturbations, i.e. after taking their Hermitian parts.
HERMITIAN_INPUT: tuple[Any, ...] = (np.linalg.cholesky, np.linalg.eigh, np.linalg.eigvalsh)


def _autograd_cotangents(ag_f: Any, args: tuple[Any, ...], kwargs: dict[str, Any], diff: list[int],
                         ybar: Any) -> dict[int, Any]:
    """``{argument index: autograd's cotangent}`` (ChainRules' complex convention), for the
    arguments autograd can differentiate: all at once, else one at a time."""

    def vjp_for(positions: list[int]) -> tuple[Any, ...]:
        def fun(*dargs: Any) -> Any:
            full = list(args)
            for i, value in zip(positions, dargs, strict=True):
                full[i] = value
            return ag_f(*full, **kwargs)

        vjp, _ = autograd.make_vjp(fun, argnum=tuple(range(len(positions))))(*(args[i] for i in positions))
        return tuple(_conj(g) for g in vjp(_conj(ybar)))

    try:
        return dict(zip(diff, vjp_for(diff), strict=True))
    except Exception as err:  # noqa: BLE001 - autograd does not support this call
        first = err
    out = {}
    if len(diff) > 1:
        for i in diff:
            try:
                out[i] = vjp_for([i])[0]
            except Exception:  # noqa: BLE001
                continue
    if not out:
        raise _Skip(f"autograd: {type(first).__name__}: {str(first)[:120]}")
    return out


def _compare_once(case: RuleCase, ag_f: Any, args: tuple[Any, ...], seed: int) -> tuple[str, str, bool]:
    """``(verdict, message, nonzero)`` for one draw; verdict agree | rulescore | autograd | kink."""
    kwargs = case.kwargs
    marked = tuple(no_tangent(a) if i in case.nondiff else a for i, a in enumerate(args))
    nodes = [NoDiffNode(a) if i in case.nondiff or int_only(a) else build_node(a, ints=False)
             for i, a in enumerate(args)]
    diff = [i for i, n in enumerate(nodes) if n.n > 0]
    if not diff:
        raise _Skip("no argument with real degrees of freedom")

    result = rc.rrule(case.f, *args, **kwargs)
    if result is None:
        raise _Skip("rrule returned None")
    y, pullback = result
    if not _leaves_ok(y):
        raise _Skip(f"output {type(y).__name__} is not (a tuple of) floats")
    out_node = build_node(y, ints=False)
    v = np.random.default_rng(seed).standard_normal(out_node.n)
    ybar = out_node.tangent(v)
    cts = pullback(ybar)
    grads = _autograd_cotangents(ag_f, args, kwargs, diff, _plain(ybar, y))
    diff = [i for i in diff if i in grads]
    mine_raw = {i: cts[1 + i] for i in diff}
    if any(case.f is g for g in HERMITIAN_INPUT):
        mine_raw = {i: _hermitian_part(rc.unthunk(t)) if i == 0 else t for i, t in mine_raw.items()}
        grads = {i: _hermitian_part(t) if i == 0 else t for i, t in grads.items()}
    try:
        mine = [nodes[i].vec(mine_raw[i]) for i in diff]
        theirs = [nodes[i].vec(grads[i]) for i in diff]
    except Exception as err:  # noqa: BLE001 - autograd's cotangent does not fit the argument
        raise _Skip(f"autograd's cotangent does not fit: {err}") from None

    tol = default_tolerance(*args)
    rtol = max(case.rtol or 0.0, tol.rtol)
    atol = max(case.atol or 0.0, tol.atol)
    nonzero = any(np.any(m != 0) for m in mine)
    if all(_close(m, t, rtol, atol) for m, t in zip(mine, theirs, strict=True)):
        return "agree", "", nonzero

    # they disagree: finite differences decide, along random directions (along Hermitian ones for
    # the functions of a Hermitian matrix), then element by element for the report
    hermitian = any(case.f is g for g in HERMITIAN_INPUT)
    problem = make_problem(case.f, marked, kwargs, [build_node(case.f, ints=False), *nodes], y, rtol)
    yvec = out_node.vec(ybar)
    try:
        ok_r, ok_a = _directional_fd(problem, nodes, diff, yvec, mine, theirs, hermitian, rtol, atol)
    except FiniteDifferenceError:  # not finite nearby: no derivative to compare with
        ok_r = ok_a = False
    if ok_r and not ok_a:
        verdict = "autograd"
    elif ok_a and not ok_r:
        verdict = "rulescore"
    else:  # both or neither: not differentiable here, or within finite differences' error
        verdict = "kink"
    lines = []
    for k, i in enumerate(diff):
        fd = full_cotangent(problem, i + 1, yvec, DEFAULT_FD)[0] if verdict == "rulescore" and not hermitian \
            else "(not computed)"
        with np.printoptions(precision=6, threshold=12, linewidth=200):
            lines.append(f"argument {i}: rulescore {mine[k]}, autograd {theirs[k]}, finite differences {fd}")
    return verdict, "; ".join(lines), nonzero


def _directional_fd(problem: Any, nodes: list[Any], diff: list[int], yvec: np.ndarray[Any, Any],
                    mine: list[np.ndarray[Any, Any]], theirs: list[np.ndarray[Any, Any]], hermitian: bool,
                    rtol: float, atol: float) -> tuple[bool, bool]:
    """Whether rulescore's and autograd's cotangents give ``<xbar, u> = <ybar, J u>`` (by finite
    differences) for two random directions ``u`` of each argument."""
    rng = np.random.default_rng(1)
    ok_r = ok_a = True
    for k, i in enumerate(diff):
        # rounding scale: from the smaller candidate, so a wildly wrong one cannot widen it
        size = min(float(np.linalg.norm(mine[k])), float(np.linalg.norm(theirs[k])))
        for _ in range(2):
            u = rng.standard_normal(nodes[i].n)
            if hermitian and i == 0:
                u = nodes[i].vec(_hermitian_part(nodes[i].tangent(u)))
            d, err = problem.jvp({i + 1: u}, DEFAULT_FD)
            fd = float(yvec @ d)
            bound = (atol * float(np.sum(np.abs(u))) + 10 * err * float(np.sum(np.abs(yvec)))
                     + max(rtol, 1e-7) * (abs(fd) + size * float(np.linalg.norm(u))))
            ok_r = ok_r and bool(abs(float(mine[k] @ u) - fd) <= bound)
            ok_a = ok_a and bool(abs(float(theirs[k] @ u) - fd) <= bound)
    return ok_r, ok_a


@functools.cache
def crosscheck(index: int) -> Outcome:
    """Cross-check ``CASES[index]`` (cached: the per-case tests and the count share results)."""
    case = CASES[index]
    ag_f = autograd_counterpart(case.f)
    if ag_f is None:
        return Outcome("skip", "autograd has no counterpart")
    outcome = Outcome("skip")
    verdicts = []
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            draws = _draw(case)
        except Exception as err:  # noqa: BLE001
            return Outcome("skip", f"drawing failed: {type(err).__name__}: {err}")
        for k, args in enumerate(draws):
            try:
                verdict, message, nonzero = _compare_once(case, ag_f, args, _seed(f"{IDS[index]}/{k}"))
            except _Skip as skip:
                outcome.reason = str(skip)
                continue
            except Exception as err:  # noqa: BLE001 - rulescore itself failed
                verdict, message, nonzero = "rulescore-error", f"{type(err).__name__}: {err}", False
            verdicts.append(verdict)
            if verdict == "agree":
                outcome.compared += 1
                outcome.nonzero = outcome.nonzero or nonzero
            else:
                outcome.details.append(f"{verdict}: args={_short(args)}: {message}")
    if "rulescore" in verdicts or "rulescore-error" in verdicts:
        outcome.status = "rulescore_wrong"
    elif outcome.compared:  # draws where autograd is wrong were checked by finite differences
        outcome.status = "agree"
    elif "autograd" in verdicts:
        outcome.status = "autograd_wrong"
    elif "kink" in verdicts:
        outcome.status = "skip"
        outcome.reason = "only draws where the function is not differentiable"
    return outcome


def _short(args: tuple[Any, ...]) -> str:
    with np.printoptions(precision=6, threshold=12, linewidth=200):
        text = repr(args)
    return text if len(text) < 400 else text[:400] + "..."


# --------------------------------------------------------------------------------------------
# the tests

#: Cases whose rulescore rule finite differences show to be wrong: ``case id: reason``.
KNOWN_WRONG: dict[str, str] = {}


def _params() -> list[Any]:
    """One test per case autograd has a counterpart for (the others cannot be compared, so they
    are not collected; ``test_enough_callables_agree`` lists them with ``pytest -s``)."""
    out = []
    for i, ident in enumerate(IDS):
        if autograd_counterpart(CASES[i].f) is None:
            continue
        marks = []
        if ident in KNOWN_WRONG:
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_WRONG[ident]))
        out.append(pytest.param(i, id=ident, marks=marks))
    return out


@pytest.mark.parametrize("index", _params())
def test_agrees_with_autograd(index: int) -> None:
    outcome = crosscheck(index)
    if outcome.status == "rulescore_wrong":
        raise AssertionError(f"rulescore disagrees with autograd and finite differences for {IDS[index]}:\n"
                             + "\n".join(outcome.details))
    if outcome.status in ("skip", "autograd_wrong"):
        pytest.skip(outcome.reason or outcome.status + ": " + "; ".join(outcome.details)[:300])


@dataclasses.dataclass
class Summary:
    """Per callable (by display name): the case ids in each outcome."""

    agree: dict[str, list[str]]  # cross-checked, every compared draw agrees (or FD sides with rulescore)
    wrong: dict[str, list[str]]  # a case where finite differences show rulescore's rule wrong
    autograd_wrong: dict[str, list[str]]  # draws where autograd is wrong (finite differences)
    skipped: dict[str, str]  # never compared: why (for one of its cases)
    via_alias: set[str]  # agreeing callables checked through an equivalent autograd expression


def summary() -> Summary:
    """Cross-check every case (cached) and sort the callables by outcome."""
    from rulescore.rules._table import display_name

    out = Summary({}, {}, {}, {}, set())
    for i, case in enumerate(CASES):
        outcome = crosscheck(i)
        name = display_name(case.f)
        if outcome.status == "agree":
            out.agree.setdefault(name, []).append(IDS[i])
            if _alias_of(case.f) is not None:
                out.via_alias.add(name)
        elif outcome.status == "rulescore_wrong":
            out.wrong.setdefault(name, []).append(IDS[i])
        else:
            out.skipped.setdefault(name, outcome.reason or outcome.status)
        if any(d.startswith("autograd:") for d in outcome.details):
            out.autograd_wrong.setdefault(name, []).append(IDS[i])
    for name in out.wrong:
        out.agree.pop(name, None)
    out.skipped = {k: v for k, v in out.skipped.items() if k not in out.agree and k not in out.wrong}
    return out


def test_enough_callables_agree() -> None:
    """At least ``MIN_AGREEING`` distinct callables cross-checked against autograd, all agreeing
    (``pytest -s`` prints the list, the callables skipped and where autograd is wrong)."""
    result = summary()
    direct = sorted(set(result.agree) - result.via_alias)
    print(f"\n{len(result.agree)} callables cross-checked against autograd and agreeing "
          f"({len(direct)} mapped directly, {len(result.via_alias)} through an equivalent expression):")
    for name in sorted(result.agree):
        tag = " (via an equivalent expression)" if name in result.via_alias else ""
        print(f"  {name}: {len(result.agree[name])} case(s){tag}")
    print(f"{len(result.skipped)} callables not cross-checked:")
    for name, reason in sorted(result.skipped.items()):
        print(f"  {name}: {reason}")
    print(f"{len(result.autograd_wrong)} callables where autograd is wrong on some draws "
          f"(finite differences agree with rulescore):")
    for name, ids in sorted(result.autograd_wrong.items()):
        print(f"  {name}: {', '.join(ids)}")
    if result.wrong:
        print(f"{len(result.wrong)} callables whose rule is wrong: {sorted(result.wrong)}")
    assert len(result.agree) >= MIN_AGREEING, (
        f"only {len(result.agree)} callables were cross-checked against autograd and agree; "
        f"at least {MIN_AGREEING} expected")
