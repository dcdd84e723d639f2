"""High-accuracy finite differences over arbitrary structures, with no dependency but NumPy.

Derivatives along a direction are central differences extrapolated to a zero step by Ridders'
method (a Richardson tableau over a geometric sequence of steps, keeping the entry with the
smallest error estimate). Steps that leave the function's domain (an exception or a non-finite
value) are shrunk. float32/float16 primals are evaluated in float64 when the function accepts it.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import rulescore as rc
from rulescore.testing._vec import Node, NoDiffNode, build_node, int_only, unwrap


class FiniteDifferenceError(ArithmeticError):
    """Finite differences could not be computed (the function fails or is not finite nearby)."""


@dataclasses.dataclass(frozen=True)
class FiniteDifferences:
    """Central differences with Richardson extrapolation (Ridders' method).

    ``step`` is the first (largest) step, relative to ``max(1, |x|)`` along a direction scaled
    to unit max-norm (default 0.1); each further level divides it by ``factor``, for at most
    ``levels`` levels. ``derivative`` returns the estimate and its error estimate.

    Example:
        >>> import numpy as np
        >>> from rulescore.testing import FiniteDifferences
        >>> d, err = FiniteDifferences().derivative(lambda t: np.array([np.exp(t)]))
        >>> bool(abs(d[0] - 1.0) < 1e-12), err < 1e-10
        (True, True)
    """

    step: float = 0.1
    factor: float = 2.0
    levels: int = 10
    retries: int = 8

    def derivative(self, g: Callable[[float], Any], scale: float = 1.0) -> tuple[np.ndarray[Any, Any], float]:
        """``d/dt g(t)`` at ``t = 0`` for ``g`` returning a real vector, with an error estimate.

        The extrapolated estimate must agree with the plain central difference at the smallest
        step used (halving the step must not change the answer). Where it does not (the first
        steps straddle a pole, a kink or a jump near the point) the differences start again from
        that smallest step; when no start agrees, a :class:`FiniteDifferenceError` says the
        estimate is unreliable (rather than letting a wrong estimate pass for the rule's error).

        Example:
            >>> import numpy as np
            >>> from rulescore.testing import FiniteDifferences
            >>> d, _ = FiniteDifferences().derivative(lambda t: np.array([1 / np.expm1(1e-3 + t)]))
            >>> bool(np.isclose(d[0], -np.exp(1e-3) / np.expm1(1e-3) ** 2, rtol=1e-6))   # pole 1e-3 away
            True
        """
        h = self.step * max(1.0, scale)
        disagreements = []
        earlier: np.ndarray[Any, Any] | None = None  # the estimate from the previous, larger first step
        for _ in range(self.retries):
            best, err, last, h_last = self._ridders(g, h)
            if _agree(best, last, err) or (earlier is not None and _agree(best, earlier, err)):
                return best, float(err)
            disagreements.append(f"from step {h:.3g}: {_show_estimate(best)}, central difference at step "
                                 f"{h_last:.3g}: {_show_estimate(last)}")
            earlier, h = best, h_last
        raise FiniteDifferenceError(
            "the finite-difference estimate is unreliable here: halving the step changes it ("
            + "; ".join(disagreements[:3]) + "): a pole, kink or jump lies within the steps of the point. "
            "Test at a point farther from it, or pass fd=FiniteDifferences(step=...) with a smaller step")

    def _ridders(self, g: Callable[[float], Any], h: float
                 ) -> tuple[np.ndarray[Any, Any], float, np.ndarray[Any, Any], float]:
        """Ridders' extrapolation from the first step ``h``: the estimate, its error estimate,
        and the plain central difference at the smallest step used, with that step."""
        first, problem = None, ""
        for _ in range(self.retries):
            first, problem = _central(g, h)
            if first is not None:
                break
            h /= 10.0
        if first is None:
            raise FiniteDifferenceError(f"the function is not finite near the point ({problem})")
        fac2 = self.factor ** 2
        table: list[list[np.ndarray[Any, Any]]] = [[first]]
        best, err = first, np.inf
        last, h_last = first, h
        for i in range(1, self.levels):
            h /= self.factor
            d, _ = _central(g, h)
            if d is None:
                break
            last, h_last = d, h
            row = [d]
            fac = fac2
            for j in range(1, i + 1):
                row.append((row[j - 1] * fac - table[i - 1][j - 1]) / (fac - 1.0))
                fac *= fac2
                e = max(_norm(row[j] - row[j - 1]), _norm(row[j] - table[i - 1][j - 1]))
                if e <= err:
                    best, err = row[j], e
            table.append(row)
            # No early stop when the error grows (Ridders' usual rule): the first, largest steps
            # may cross a pole or a kink, and only the smaller steps that follow are good.
            if err <= 1e-13 * (1.0 + _norm(best)):
                break
        return best, float(err), last, h_last


#: How far (relative) the extrapolated estimate may be from the plain central difference at the
#: smallest step: that difference's truncation error is ``O(h^2)``, far below this on smooth
#: functions; across a pole the two differ by orders of magnitude.
_AGREEMENT = 0.05


def _agree(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any], err: float) -> bool:
    return _norm(a - b) <= max(_AGREEMENT * max(_norm(a), _norm(b)), 10.0 * err, 1e-12)


def _show_estimate(d: np.ndarray[Any, Any]) -> str:
    return f"{float(d.flat[0]):.6g}" if d.size == 1 else np.array2string(d, precision=4, threshold=4)


def _norm(a: np.ndarray[Any, Any]) -> float:
    return float(np.max(np.abs(a))) if a.size else 0.0


def _central(g: Callable[[float], Any], h: float) -> tuple[np.ndarray[Any, Any] | None, str]:
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plus = np.asarray(g(h), dtype=np.float64)
            minus = np.asarray(g(-h), dtype=np.float64)
    except FiniteDifferenceError:
        raise
    except Exception as err:  # noqa: BLE001 - any failure means "outside the domain": shrink the step
        return None, f"{type(err).__name__}: {err}"
    d = (plus - minus) / (2.0 * h)
    if not np.all(np.isfinite(d)):
        return None, f"non-finite values at step {h:.3g}"
    return d, ""


DEFAULT_FD = FiniteDifferences()


class Problem:
    """``f`` applied to ``(f, *args)``-style inputs seen as nodes, for finite differences.

    ``inputs`` is ``(f, *args)``; ``nodes[i]`` says which degrees of freedom of input ``i`` are
    perturbed. ``call(inputs)`` evaluates ``f`` and ``out_node.values`` reads its output.
    """

    def __init__(self, f: Any, args: Sequence[Any], kwargs: dict[str, Any], nodes: Sequence[Node],
                 out_node: Node, promote: bool) -> None:
        self.inputs = (f, *args)
        self.kwargs = kwargs
        self.nodes = list(nodes)
        self.out_node = out_node
        self.promote = promote

    def evaluate(self, directions: dict[int, np.ndarray[Any, Any]], t: float) -> np.ndarray[Any, Any]:
        moved = [self.nodes[i].perturb(t * directions[i], self.promote) if i in directions else unwrap(x)
                 for i, x in enumerate(self.inputs)]
        fn, *args = moved
        y = fn(*args, **self.kwargs)
        return self.out_node.values(y)

    def jvp(self, directions: dict[int, np.ndarray[Any, Any]], fd: FiniteDifferences
            ) -> tuple[np.ndarray[Any, Any], float]:
        """``J @ v`` (real coordinates of the output) for the directions ``{input: v}``."""
        directions = {i: v for i, v in directions.items() if v.size and np.any(v)}
        if not directions:
            return np.zeros(self.out_node.n), 0.0
        size = max(float(np.max(np.abs(v))) for v in directions.values())
        unit = {i: v / size for i, v in directions.items()}
        scale = max(float(np.max(np.abs(self.nodes[i].values(unwrap(self.inputs[i])))))
                    if self.nodes[i].n else 0.0 for i in unit)
        d, err = fd.derivative(lambda t: self.evaluate(unit, t), scale)
        return d * size, err * size


def make_problem(f: Any, args: Sequence[Any], kwargs: dict[str, Any], nodes: Sequence[Node],
                 y: Any, tol: float) -> Problem:
    """A :class:`Problem`, evaluating in float64 when ``f`` gives the same output that way."""
    out_node = build_node(y, ints=True)
    plain = Problem(f, args, kwargs, nodes, out_node, promote=False)
    if not _has_low_precision((f, *args)):
        return plain
    promoted = Problem(f, args, kwargs, nodes, out_node, promote=True)
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            zero = {i: np.zeros(n.n) for i, n in enumerate(nodes) if n.n}
            hi = promoted.evaluate(zero, 0.0)
        lo = out_node.values(y)
    except Exception:  # noqa: BLE001 - f does not accept float64 inputs: stay in its precision
        return plain
    if hi.shape == lo.shape and np.allclose(hi, lo, rtol=max(tol, 1e-3), atol=max(tol, 1e-3)):
        return promoted
    return plain


def _has_low_precision(x: Any, depth: int = 0) -> bool:
    if isinstance(x, (np.ndarray, np.generic)):
        return x.dtype in (np.float16, np.float32, np.complex64)
    if depth < 8 and isinstance(x, (tuple, list)):
        return any(_has_low_precision(v, depth + 1) for v in x)
    if depth < 8 and isinstance(x, dict):
        return any(_has_low_precision(v, depth + 1) for v in x.values())
    if depth < 8 and dataclasses.is_dataclass(x) and not isinstance(x, type):
        return any(_has_low_precision(v, depth + 1) for v in rc.fields_of(x).values())
    return False


def _arg_node(a: Any) -> Node:
    # integer arguments (and tuples of them) are indices, axes, sizes: not perturbed
    return NoDiffNode(a, nodiff=True) if int_only(a) else build_node(a, ints=False)


def fd_jvp(f: Any, args: Sequence[Any], tangents: Sequence[Any], fd: FiniteDifferences = DEFAULT_FD,
           **kwargs: Any) -> Any:
    """The tangent of ``f(*args, **kwargs)`` along ``tangents`` (one per arg), by finite differences.

    Structures, complex numbers and ``rct.no_tangent`` markers work as in ``test_frule``; the
    result is in the output's tangent space (``ZeroTangent()`` entries count as zero). Integer
    arguments are indices and are not perturbed (pass a float to differentiate with respect to it).

    Example:
        >>> import numpy as np
        >>> from rulescore.testing import fd_jvp
        >>> ydot = fd_jvp(np.sin, (np.array([0.0, 1.0]),), (np.array([1.0, 1.0]),))
        >>> np.allclose(ydot, np.cos([0.0, 1.0]), rtol=1e-10)
        True
    """
    if len(tangents) != len(args):
        raise ValueError(f"got {len(tangents)} tangents for {len(args)} arguments")
    nodes = [build_node(f, ints=False)] + [_arg_node(a) for a in args]
    y = f(*(unwrap(a) for a in args), **kwargs)
    problem = make_problem(f, args, kwargs, nodes, y, 1e-6)
    directions = {i + 1: nodes[i + 1].vec(t, f"tangent {i + 1}") for i, t in enumerate(tangents)}
    d, _ = problem.jvp(directions, fd)
    return problem.out_node.tangent(d)


def fd_vjp(f: Any, args: Sequence[Any], ybar: Any, fd: FiniteDifferences = DEFAULT_FD,
           **kwargs: Any) -> tuple[Any, ...]:
    """One cotangent per arg of ``f(*args, **kwargs)`` for the output cotangent ``ybar``, by finite
    differences element by element (``NoTangent()`` for arguments without a tangent space and for
    integer arguments, which are taken for indices).

    Example:
        >>> import numpy as np
        >>> from rulescore.testing import fd_vjp
        >>> a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
        >>> abar, bbar = fd_vjp(np.multiply, (a, b), np.ones(2))
        >>> np.allclose(abar, b), np.allclose(bbar, a)
        (True, True)
    """
    nodes = [build_node(f, ints=False)] + [_arg_node(a) for a in args]
    y = f(*(unwrap(a) for a in args), **kwargs)
    problem = make_problem(f, args, kwargs, nodes, y, 1e-6)
    yvec = problem.out_node.vec(ybar, "ybar")
    out = []
    for i, node in enumerate(nodes[1:], start=1):
        if node.n == 0:
            out.append(node.tangent(np.zeros(0)))
            continue
        out.append(node.tangent(full_cotangent(problem, i, yvec, fd)[0]))
    return tuple(out)


def full_cotangent(problem: Problem, i: int, yvec: np.ndarray[Any, Any], fd: FiniteDifferences
                   ) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Element-wise ``J_i^T ybar`` by finite differences, and the error estimate of each element."""
    n = problem.nodes[i].n
    values, errors = np.zeros(n), np.zeros(n)
    for k in range(n):
        e = np.zeros(n)
        e[k] = 1.0
        d, err = problem.jvp({i: e}, fd)
        values[k] = float(yvec @ d)
        errors[k] = err * float(np.sum(np.abs(yvec)))
    return values, errors
