"""Checks of what a rule returned, without finite differences: tolerances, mutation of inputs,
tangent spaces, primal outputs.
"""

from __future__ import annotations

import copy
import dataclasses
import types
from collections.abc import Sequence
from typing import Any

import numpy as np

import rulescore as rc
from rulescore.testing._report import (
    _MAX_LISTED,
    _fmt,
    _kind,
    _Report,
    _show,
)
from rulescore.testing._vec import (
    Node,
    NoTangentArg,
    build_node,
)

_UNCOPYABLE: Any = object()


# --------------------------------------------------------------------------------------------
# tolerances


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """``|got - expected| <= atol + rtol * scale + 10 * (finite-difference error estimate)``."""

    rtol: float
    atol: float

    def bound(self, scale: float, fd_error: float = 0.0) -> float:
        return self.atol + self.rtol * scale + 10.0 * fd_error


def _lowest_precision(x: Any, depth: int = 0) -> int:
    """Bits of mantissa of the least precise float leaf in ``x`` (53 for float64 or none)."""
    if isinstance(x, (np.ndarray, np.generic)):
        return {np.dtype(np.float16): 11, np.dtype(np.float32): 24,
                np.dtype(np.complex64): 24}.get(x.dtype, 53)
    if depth > 8:
        return 53
    if isinstance(x, NoTangentArg):
        return 53
    if isinstance(x, (tuple, list)):
        return min((_lowest_precision(v, depth + 1) for v in x), default=53)
    if isinstance(x, dict):
        return min((_lowest_precision(v, depth + 1) for v in x.values()), default=53)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return min((_lowest_precision(v, depth + 1) for v in rc.fields_of(x).values()), default=53)
    return 53


def default_tolerance(*values: Any) -> Tolerance:
    """Default tolerances for checks involving ``values``: by their least precise float dtype.

    float64: ``rtol=1e-6, atol=1e-9``; float32/complex64: ``rtol=1e-3, atol=1e-5``; float16:
    ``rtol=3e-2, atol=1e-2`` (finite differences are computed in float64 where possible).

    Example:
        >>> import numpy as np
        >>> from rulescore.testing import default_tolerance
        >>> default_tolerance(np.zeros(2, np.float32), 1.0)
        Tolerance(rtol=0.001, atol=1e-05)
    """
    bits = min((_lowest_precision(v) for v in values), default=53)
    if bits <= 11:
        return Tolerance(3e-2, 1e-2)
    if bits <= 24:
        return Tolerance(1e-3, 1e-5)
    return Tolerance(1e-6, 1e-9)


def _tolerance(rtol: float | None, atol: float | None, *values: Any) -> Tolerance:
    base = default_tolerance(*values)
    return Tolerance(base.rtol if rtol is None else rtol, base.atol if atol is None else atol)



# --------------------------------------------------------------------------------------------
# mutation


def _snapshot(x: Any) -> Any:
    try:
        return copy.deepcopy(x)
    except Exception:  # noqa: BLE001 - cannot snapshot: cannot check mutation
        return _UNCOPYABLE


def _same(a: Any, b: Any, depth: int = 0) -> bool:
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return False
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        try:
            return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
        except TypeError:
            return bool(np.array_equal(a, b))
    if depth > 16:
        return True
    if isinstance(a, (tuple, list)):
        return (type(a) is type(b) and len(a) == len(b)
                and all(_same(x, y, depth + 1) for x, y in zip(a, b, strict=True)))
    if isinstance(a, dict):
        return (type(a) is type(b) and a.keys() == b.keys()
                and all(_same(a[k], b[k], depth + 1) for k in a))
    if isinstance(a, (int, float, complex, np.generic)):
        if isinstance(a, (float, complex, np.inexact)) and isinstance(b, (float, complex, np.inexact)):
            if np.isnan(a) and np.isnan(b):
                return True
        return type(a) is type(b) and bool(a == b)
    if dataclasses.is_dataclass(a) or hasattr(a, "__dict__") or hasattr(type(a), "__slots__"):
        if type(a) is not type(b) or isinstance(a, (type, types.FunctionType, types.BuiltinFunctionType,
                                                    types.ModuleType, np.ufunc)):
            return True  # functions and classes: nothing to compare by value
        try:
            fa, fb = rc.fields_of(a), rc.fields_of(b)
        except Exception:  # noqa: BLE001
            return True
        return fa.keys() == fb.keys() and all(_same(fa[k], fb[k], depth + 1) for k in fa)
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return True


def _mutation(report: _Report, before: Any, after: Any, names: Sequence[str], stage: str) -> None:
    if before is _UNCOPYABLE:
        return
    for name, old, new in zip(names, before, after, strict=True):
        if not _same(old, new):
            report.fail(f"{stage} mutated {name}: it was {_show(old, 300)}, it is now {_show(new, 300)}. "
                        "Rules must never write into their inputs (no out=, +=, x[i] = v)")



# --------------------------------------------------------------------------------------------
# tangent spaces


class _BoundMethodNode(Node):
    """A bound method's degrees of freedom are those of its ``self``."""

    def __init__(self, f: Any, self_node: Node) -> None:
        self.f, self.self_node = f, self_node
        self.n, self.nodiff = self_node.n, self_node.nodiff

    def perturb(self, v: np.ndarray[Any, Any], promote: bool = False) -> Any:
        new_self = self.self_node.perturb(v, promote)
        if isinstance(self.f, types.MethodType):
            return types.MethodType(self.f.__func__, new_self)
        return getattr(new_self, self.f.__name__)

    def values(self, y: Any) -> np.ndarray[Any, Any]:
        return self.self_node.values(y.__self__)

    def tangent(self, v: np.ndarray[Any, Any]) -> Any:
        return self.self_node.tangent(v)

    def vec(self, t: Any, path: str = "") -> np.ndarray[Any, Any]:
        return self.self_node.vec(t, path)

    def labels(self, prefix: str) -> list[str]:
        return self.self_node.labels(prefix)


def _f_node(f: Any) -> Node:
    bound = rc.unbind(f)
    if bound is not None and not isinstance(bound[1], (types.ModuleType, type)):
        return _BoundMethodNode(f, build_node(bound[1], ints=False))
    return build_node(f, ints=False)


def _is_float_like(x: Any) -> bool:
    return isinstance(x, float) and not isinstance(x, np.floating) or type(x) is np.float64


def _fixed_point_problem(got: Any, projected: Any, path: str, strict: bool) -> str | None:
    got = rc.unthunk(got)
    if rc.is_zero(got):
        return None
    if isinstance(projected, rc.NoTangent):
        return f"{path}: a {type(got).__name__} where there is no tangent space (expected NoTangent())"
    if isinstance(projected, rc.Tangent):
        if not isinstance(got, rc.Tangent):
            if strict or not isinstance(got, (tuple, list, dict)):
                return (f"{path}: a {type(got).__name__} where ProjectTo gives a {type(projected).__name__}"
                        " (return an rc.Tangent, e.g. via rc.project)")
            mine = dict(enumerate(got)) if isinstance(got, (tuple, list)) else dict(got)
        elif type(got) is not type(projected):
            return f"{path}: a {type(got).__name__} where ProjectTo gives a {type(projected).__name__}"
        else:
            mine = dict(got.items())
        for k, v in projected.items():
            sub = f"{path}[{k!r}]" if isinstance(k, int) or issubclass(projected.primal_type, dict) \
                else f"{path}.{k}"
            problem = _fixed_point_problem(mine.get(k), v, sub, strict)
            if problem:
                return problem
        return None
    if isinstance(projected, np.ndarray):
        if projected.ndim == 0 and isinstance(got, np.generic) and got.dtype == projected.dtype:
            return None  # NumPy reductions give scalars for 0-d results
        if not isinstance(got, np.ndarray):
            return (f"{path}: a {_kind(got)} where the tangent space holds ndarray[{projected.dtype} "
                    f"{projected.shape}]")
        if got.shape != projected.shape:
            return (f"{path}: shape {got.shape} where the primal has shape {projected.shape}"
                    " (sum broadcast dimensions away: rc.project / rc.unbroadcast)")
        if got.dtype != projected.dtype:
            return f"{path}: dtype {got.dtype} where the tangent space has dtype {projected.dtype}"
        return None
    if isinstance(projected, np.generic):
        if type(got) is not type(projected):
            return f"{path}: a {_kind(got)} where the tangent space holds {projected.dtype} scalars"
        return None
    if isinstance(projected, (float, complex)) and not strict:
        if isinstance(projected, float) and np.iscomplexobj(got):
            return f"{path}: a complex {type(got).__name__} for a real primal"
        if np.ndim(got) != 0:
            return f"{path}: shape {np.shape(got)} for a scalar"
        return None
    if isinstance(projected, float):
        if not _is_float_like(got):
            return f"{path}: a {_kind(got)} where the tangent space holds Python floats"
        return None
    if isinstance(projected, complex):
        if not isinstance(got, complex) or isinstance(got, np.complex64):
            return f"{path}: a {_kind(got)} where the tangent space holds Python complex numbers"
        return None
    if type(got) is not type(projected) and not isinstance(got, type(projected)):
        return f"{path}: a {type(got).__name__} where ProjectTo gives a {type(projected).__name__}"
    return None


def tangent_space_problem(x: Any, t: Any, strict: bool = True) -> str | None:
    """Why ``t`` is not in the tangent space of ``x`` (``ProjectTo(x)`` moves it), or ``None``.

    Zeros (``None``, ``ZeroTangent()``, ``NoTangent()``) are in every tangent space. With
    ``strict=False`` (for AD engines' user-facing results) plain tuples/lists/dicts stand for
    ``rc.Tangent`` and any real (complex) 0-d number is accepted for a real (complex) scalar.

    Example:
        >>> import numpy as np
        >>> from rulescore.testing import tangent_space_problem
        >>> x = np.zeros(3, np.float32)
        >>> tangent_space_problem(x, np.ones(3, np.float32)) is None
        True
        >>> tangent_space_problem(x, np.ones(3))
        ': dtype float64 where the tangent space has dtype float32'
        >>> tangent_space_problem(x, np.ones((2, 3), np.float32))  # doctest: +ELLIPSIS
        ': shape (2, 3) where the primal has shape (3,) (sum broadcast dimensions away...)'
    """
    t = rc.unthunk(t)
    if rc.is_zero(t):
        return None
    if isinstance(x, NoTangentArg):
        return f": a {type(t).__name__} for an argument marked no_tangent"
    try:
        projected = rc.ProjectTo(x)(t)
    except Exception as err:  # noqa: BLE001 - any projection failure is the answer
        return f": ProjectTo rejects it ({type(err).__name__}: {err})"
    return _fixed_point_problem(t, projected, "", strict)



# --------------------------------------------------------------------------------------------
# primal output


def _primal_problems(y: Any, ref: Any, tol: Tolerance, path: str = "output", depth: int = 0) -> list[str]:
    if isinstance(ref, np.ndarray):
        if not isinstance(y, np.ndarray):
            if np.ndim(y) == 0 and ref.ndim == 0:
                return _primal_problems(np.asarray(y), ref, tol, path, depth)
            return [f"{path}: the rule returns a {_kind(y)}, f returns a {_kind(ref)}"]
        if y.shape != ref.shape or y.dtype != ref.dtype:
            return [f"{path}: the rule returns a {_kind(y)}, f returns a {_kind(ref)}"]
        if ref.dtype.kind in "fciu":
            return _numbers_problems(y, ref, tol, path)
        return [] if _same(y, ref) else [f"{path}: the rule returns {_show(y)}, f returns {_show(ref)}"]
    if isinstance(ref, (bool, np.bool_, str, bytes)) or ref is None:
        return [] if _same(y, ref) else [f"{path}: the rule returns {_show(y)}, f returns {_show(ref)}"]
    if isinstance(ref, (int, float, complex, np.number)):
        if np.ndim(y) != 0 or isinstance(y, (str, bytes)):
            return [f"{path}: the rule returns a {_kind(y)}, f returns a {_kind(ref)}"]
        try:
            yv = np.asarray(y)
        except Exception:  # noqa: BLE001
            return [f"{path}: the rule returns a {_kind(y)}, f returns a {_kind(ref)}"]
        if np.iscomplexobj(yv) and not np.iscomplexobj(ref):
            return [f"{path}: the rule returns a complex {_kind(y)}, f returns a real {_kind(ref)}"]
        return _numbers_problems(yv, np.asarray(ref), tol, path)
    if depth > 16:
        return []
    if isinstance(ref, (tuple, list)) and not hasattr(type(ref), "_fields"):
        if not isinstance(y, (tuple, list)) or len(y) != len(ref):
            return [f"{path}: the rule returns a {_kind(y)}, "
                    f"f returns a {type(ref).__name__} of length {len(ref)}"]
        return [p for i, (a, b) in enumerate(zip(y, ref, strict=True))
                for p in _primal_problems(a, b, tol, f"{path}[{i}]", depth + 1)]
    if isinstance(ref, dict):
        if not isinstance(y, dict) or y.keys() != ref.keys():
            return [f"{path}: the rule returns {_show(y, 200)}, f returns a dict with keys {list(ref)}"]
        return [p for k in ref for p in _primal_problems(y[k], ref[k], tol, f"{path}[{k!r}]", depth + 1)]
    if dataclasses.is_dataclass(ref) or hasattr(type(ref), "_fields"):
        if type(y) is not type(ref):
            return [f"{path}: the rule returns a {type(y).__name__}, f returns a {type(ref).__name__}"]
        fy, fr = rc.fields_of(y), rc.fields_of(ref)
        return [p for k in fr for p in _primal_problems(fy.get(k), fr[k], tol, f"{path}.{k}", depth + 1)]
    return []


def _numbers_problems(y: np.ndarray[Any, Any], ref: np.ndarray[Any, Any], tol: Tolerance,
                      path: str) -> list[str]:
    a, b = y.astype(np.complex128), ref.astype(np.complex128)
    with np.errstate(all="ignore"):
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        err = np.where(same, 0.0, np.abs(a - b))
        scale = float(np.max(np.abs(b[np.isfinite(b)]), initial=0.0))
        bad = ~(err <= tol.bound(scale))
    if not np.any(bad):
        return []
    idx = [tuple(int(i) for i in ix) for ix in np.argwhere(bad)[:_MAX_LISTED]]
    shown = "; ".join(f"{path}{list(i) if i else ''}: rule {_fmt_c(y[i])} vs f {_fmt_c(ref[i])}" for i in idx)
    return [f"the primal output differs from f(*args): {int(bad.sum())} of {bad.size} values: {shown}"]


def _fmt_c(v: Any) -> str:
    v = complex(v)
    return _fmt(v.real) if v.imag == 0 else f"{_fmt(v.real)}{v.imag:+.10g}j"
