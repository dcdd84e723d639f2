"""``test_rrule``, ``test_frule``, ``test_frule_rrule`` and ``test_scalar``: rule checks against
finite differences, with reports a person can act on.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import rulescore as rc
from rulescore._contract import zeros_like_primal
from rulescore.testing._finite_differences import (
    DEFAULT_FD,
    FiniteDifferenceError,
    FiniteDifferences,
    Problem,
    full_cotangent,
    make_problem,
)
from rulescore.testing._report import (
    _MAX_ELEMENTWISE,
    _MAX_LISTED,
    _arg_label,
    _call,
    _dof_label,
    _fmt,
    _invoke,
    _Report,
    _rule_text,
    _show,
)
from rulescore.testing._result_checks import (
    _UNCOPYABLE,
    Tolerance,
    _BoundMethodNode,
    _f_node,
    _mutation,
    _primal_problems,
    _same,
    _snapshot,
    _tolerance,
    tangent_space_problem,
)
from rulescore.testing._test_config import config_for, configured
from rulescore.testing._vec import (
    Node,
    NoDiffNode,
    NoTangentArg,
    TangentMismatch,
    build_node,
    int_only,
    unwrap,
)

_AUTO: Any = object()


# --------------------------------------------------------------------------------------------
# shared set-up


def _rng(rng: Any) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(0 if rng is None else rng)


def _nondiff_rule(table: rc.RuleTable, f: Any, primals: tuple[Any, ...]) -> bool:
    try:
        rule = table.lookup(f, primals)
        if rule is None:
            bound = rc.unbind(f)
            if bound is not None:
                rule = table.lookup(bound[0], (bound[1], *primals))
    except Exception:  # noqa: BLE001 - ambiguity etc. surfaces when the rule is applied
        return False
    return rule is not None and rule.non_differentiable


@dataclasses.dataclass
class _Setup:
    f: Any
    args: tuple[Any, ...]          # as given (may hold no_tangent markers)
    primals: tuple[Any, ...]       # markers removed
    kwargs: dict[str, Any]
    tol: Tolerance
    fd: FiniteDifferences
    gen: np.random.Generator
    y: Any                          # f(*primals, **kwargs)
    snapshot: Any

    @property
    def inputs(self) -> tuple[Any, ...]:
        return (self.f, *self.args)


def _setup(report_what: str, f: Any, args: tuple[Any, ...], kwargs: dict[str, Any], rtol: float | None,
           atol: float | None, fd: FiniteDifferences | None, rng: Any) -> _Setup:
    primals = tuple(unwrap(a) for a in args)
    snapshot = _snapshot((f, primals, kwargs))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        y = f(*primals, **kwargs)
    if snapshot is not _UNCOPYABLE and not _same(snapshot, (f, primals, kwargs)):
        raise AssertionError(f"{report_what}: {_call(f, args)} itself mutates its arguments, so it cannot be "
                             "checked by finite differences")
    tol = _tolerance(rtol, atol, args, y)
    return _Setup(f, args, primals, kwargs, tol, fd or DEFAULT_FD, _rng(rng), y, snapshot)


def _check_mutations(report: _Report, s: _Setup, stage: str,
                     extra: Sequence[tuple[str, Any, Any]] = ()) -> None:
    names = ["f itself", *[f"argument {i}" for i in range(1, len(s.args) + 1)]]
    if s.snapshot is not _UNCOPYABLE:
        _, before_args, before_kw = s.snapshot
        _mutation(report, (s.snapshot[0], *before_args), s.inputs[:1] + s.primals, names, stage)
        _mutation(report, (before_kw,), (s.kwargs,), ["the keyword arguments"], stage)
    for name, before, now in extra:
        if before is not _UNCOPYABLE:
            _mutation(report, (before,), (now,), [name], stage)


def _is_differentiable_input(i: int, x: Any) -> bool:
    """Whether input ``i`` of ``(f, *args)`` gets a random tangent (ints count as indices)."""
    if isinstance(x, NoTangentArg):
        return False
    if i > 0 and int_only(x):
        return False
    node = _f_node(x) if i == 0 else build_node(x, ints=False)
    return node.n > 0


def _node(i: int, x: Any, ints: bool = False) -> Node:
    if isinstance(x, NoTangentArg):
        return NoDiffNode(x.value)
    return _f_node(x) if i == 0 else build_node(x, ints=ints)



# --------------------------------------------------------------------------------------------
# test_rrule


def test_rrule(f: Any, *args: Any, output_tangent: Any = _AUTO, rtol: float | None = None,
               atol: float | None = None, fd: FiniteDifferences | None = None,
               rrule_f: Callable[..., Any] | None = None, fkwargs: dict[str, Any] | None = None,
               check_thunks: bool = True, strict: bool = True, rng: Any = None,
               config: rc.RuleConfig | None = None, **kwargs: Any) -> None:
    """Check the rrule of ``f`` at ``args`` against finite differences; ``AssertionError`` if wrong.

    Checks that the rule returns ``(y, pullback)`` with ``y`` matching ``f(*args, **kwargs)``;
    that ``pullback(ybar)`` returns ``1 + len(args)`` cotangents, each in its primal's tangent
    space (``ProjectTo`` is a fixed point) and agreeing with finite differences (``<ybar, J xdot>
    == <xbar, xdot>`` along a random direction; element-wise detail on failure); that
    non-differentiable arguments get ``NoTangent()`` (bools, strings, ``rct.no_tangent(x)``; an
    integer argument that gets ``NoTangent()`` is taken for an index, otherwise it is checked as a
    real number); that a thunked ybar gives the same and a zero ybar gives zeros; and that nothing
    was mutated. Rules declared with ``rc.non_differentiable`` must give ``NoTangent()`` everywhere.

    ``output_tangent``: the ybar to use (default: random in the output's tangent space).
    ``rrule_f``: a stand-in for ``rc.rrule`` (same signature), e.g. an AD engine's pullback.
    ``fkwargs``: keyword arguments for ``f`` whose names collide with this function's.
    ``config``: the :class:`~rulescore.RuleConfig` the rule receives (a rule registered with
    ``config=``); by default a :class:`rct.TestConfig <rulescore.testing.TestConfig>` when ``f``
    has only such rules: its ``rrule_via_ad`` uses rules or finite differences, no engine needed.
    ``strict=False`` accepts user-facing forms of tangents (None, plain tuples) from AD engines.
    ``rng``: seed or ``numpy.random.Generator`` for the random directions (default seed 0).

    Example:
        >>> import numpy as np, rulescore as rc, rulescore.testing as rct
        >>> def twice(x): return 2.0 * x
        >>> def rrule_with_factor(factor):
        ...     def twice_rrule(x):
        ...         def twice_pullback(ybar):
        ...             ybar = rc.unthunk(ybar)
        ...             if rc.is_zero(ybar):
        ...                 return rc.NoTangent(), rc.ZeroTangent()
        ...             return rc.NoTangent(), rc.project(x, factor * ybar)
        ...         return twice(x), twice_pullback
        ...     return twice_rrule
        >>> _ = rc.rrule.register(twice)(rrule_with_factor(2.0))
        >>> rct.test_rrule(twice, np.array([1.0, 2.0]))
        >>> _ = rc.rrule.register(twice)(rrule_with_factor(3.0))   # a wrong rule
        >>> rct.test_rrule(twice, np.array([1.0, 2.0]), output_tangent=np.ones(2))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        AssertionError: rrule failed for ...twice(ndarray[float64 (2,)]): 1 problem
          1. the cotangent of argument 1 (ndarray[float64 (2,)]) disagrees with finite differences:
             ...
             arg1[0]: expected 2, got 3
        ...
    """
    kwargs = {**(fkwargs or {}), **kwargs}
    s = _setup("test_rrule", f, args, kwargs, rtol, atol, fd, rng)
    config = None if rrule_f is not None else config_for(rc.rrule, f, s.primals, config)
    if config is not None:
        rrule_f = configured(rc.rrule, config)
    report = _Report("rrule", f, s.primals, kwargs, _rule_text(rc.rrule, f, s.primals, rrule_f))
    try:
        _run_rrule(report, s, output_tangent, rrule_f, check_thunks, strict)
    except rc.RuleError as err:
        raise report.fatal(f"rulescore's checking mode rejected the rule: {err}") from err
    report.finish()


test_rrule.__test__ = False  # type: ignore[attr-defined]


def _call_rrule(report: _Report, s: _Setup, rrule_f: Callable[..., Any] | None) -> tuple[Any, Any]:
    call = rrule_f if rrule_f is not None else rc.rrule
    res = _invoke(report, "the rrule", lambda: call(s.f, *s.primals, **s.kwargs))
    if res is None:
        raise report.fatal("no rrule applies to this call (rc.rrule returned None)")
    if not (isinstance(res, tuple) and len(res) == 2 and callable(res[1])):
        raise report.fatal(f"the rrule returned {_show(res, 200)}; expected a (y, pullback) pair")
    return res[0], res[1]


def _run_rrule(report: _Report, s: _Setup, output_tangent: Any, rrule_f: Callable[..., Any] | None,
               check_thunks: bool, strict: bool) -> None:
    y, pullback = _call_rrule(report, s, rrule_f)
    _check_mutations(report, s, "the rrule")
    for p in _primal_problems(y, s.y, s.tol):
        report.fail(p)
    out_node = build_node(s.y, ints=True)
    ybar = out_node.tangent(s.gen.standard_normal(out_node.n)) if output_tangent is _AUTO else output_tangent
    report.context.append(("output cotangent ybar", ybar))
    ybar_before = _snapshot(ybar)
    cts = _invoke(report, "the pullback", lambda: pullback(ybar))
    _check_mutations(report, s, "the pullback", [("the output cotangent ybar", ybar_before, ybar)])
    if not isinstance(cts, tuple):
        raise report.fatal(f"the pullback returned a {type(cts).__name__}; expected a tuple of "
                           f"{1 + len(s.args)} cotangents (one for f, then one per positional argument)")
    if len(cts) != 1 + len(s.args):
        raise report.fatal(f"the pullback returned {len(cts)} cotangents; expected {1 + len(s.args)} "
                           "(one for f itself, then one per positional argument)")
    try:
        yvec = out_node.vec(ybar, "ybar")
    except TangentMismatch as err:
        raise report.fatal(f"the output cotangent does not fit the output: {err}") from None

    if rc.is_zero(rc.unthunk(ybar)):  # the output has no tangent space: the rule contract
        for i, ct in enumerate(cts):    # answers zeros without calling the author's pullback
            if not rc.is_zero(rc.unthunk(ct)):
                report.fail(f"{_arg_label(i, s.inputs[i])}: the output cotangent is {ybar!r}, but the "
                            f"pullback gives {_show(ct, 200)}; expected a zero")
        return
    nondiff_rule = rrule_f is None and _nondiff_rule(rc.rrule, s.f, s.primals)
    targets: list[tuple[int, Node, np.ndarray[Any, Any]]] = []
    nodes: list[Node] = []
    for i, (x, ct) in enumerate(zip(s.inputs, cts, strict=True)):
        label = _arg_label(i, x)
        nodes.append(NoDiffNode(unwrap(x), nodiff=False))
        target = _classify_cotangent(report, i, x, rc.unthunk(ct), label, nondiff_rule, strict)
        if target is None:
            continue
        nodes[i] = target
        try:
            targets.append((i, target, target.vec(ct, _dof_label(i))))
        except TangentMismatch as err:
            report.fail(f"the cotangent of {label} does not fit its primal: {err}")

    problem = make_problem(s.f, s.primals, s.kwargs, nodes, s.y, s.tol.rtol)
    for i, node, vec in targets:
        _check_cotangent_fd(report, s, problem, i, node, vec, yvec, cts[i])
    if rrule_f is None and not s.kwargs:
        _check_scalar_form(report, s, y, ybar, cts)

    if check_thunks:
        _check_thunk_and_zero(report, s, pullback, ybar, cts, targets)


_REAL_SCALARS = (float, int, np.float64)


def _check_scalar_form(report: _Report, s: _Setup, y: Any, ybar: Any, cts: tuple[Any, ...]) -> None:
    """At real scalar arguments, the rule's scalar form (``RulePair(..., scalar=...)`` or the one
    derived from ``partials=``), which an engine may use instead of the rrule, must give the
    rrule's output and, times ``ybar``, its cotangents."""
    rule = rc.rrule.lookup(s.f, s.primals)
    form = None if rule is None else rule.scalar
    if form is None or not all(type(p) in _REAL_SCALARS for p in s.primals):
        return
    answer = _invoke(report, "the scalar form", lambda: form(*s.primals))
    if answer is None:
        return  # it gives no numbers here: the rrule is used
    z, partials = answer
    if type(z) not in (float, np.float64):
        return  # not a real scalar (np.float32(x)): an engine runs the rrule
    if not np.isclose(z, y, rtol=1e-12, atol=0.0, equal_nan=True):
        report.fail(f"the scalar form gives the output {z!r}; the rrule gives {y!r}")
    if len(partials) != len(s.primals):
        report.fail(f"the scalar form gives {len(partials)} partials for {len(s.primals)} arguments")
        return
    for i, (d, ct) in enumerate(zip(partials, cts[1:], strict=True), start=1):
        ct = rc.unthunk(ct)
        if isinstance(ct, rc.NoTangent) or type(d) not in _REAL_SCALARS:
            continue  # not a number there: an engine runs the rrule instead
        got = ybar * d
        expected = 0.0 if rc.is_zero(ct) else ct
        if not np.isclose(got, expected, rtol=1e-9, atol=1e-300, equal_nan=True):
            report.fail(f"{_arg_label(i, s.inputs[i])}: the scalar form's partial {d!r} times ybar is "
                        f"{got!r}; the pullback gives {expected!r}")


def _classify_cotangent(report: _Report, i: int, x: Any, ct: Any, label: str, nondiff_rule: bool,
                        strict: bool) -> Node | None:
    """Check what can be checked without finite differences; the node to check by FD, or None."""
    if isinstance(ct, rc.NotImplementedTangent):
        return None  # rc.not_implemented: the author declared this derivative missing; skipped
    is_none_ok = not strict and ct is None
    if nondiff_rule or isinstance(x, NoTangentArg):
        why = "the rule is declared non-differentiable" if nondiff_rule else "it is marked no_tangent"
        if not (isinstance(ct, rc.NoTangent) or is_none_ok):
            report.fail(f"{label} must get NoTangent() ({why}), got {_show(ct, 200)}")
        return None
    if i == 0 and not strict and (ct is None or isinstance(ct, rc.NoTangent)):
        return None  # AD engines do not differentiate with respect to the function itself
    prim = x
    node = _node(i, prim)
    if node.nodiff or (i == 0 and node.n == 0 and not int_only(prim)):
        if not (isinstance(ct, rc.NoTangent) or is_none_ok):
            extra = (" (use ZeroTangent() only for a differentiable input whose derivative is zero)"
                     if isinstance(ct, rc.ZeroTangent) else "")
            report.fail(f"{label} has no tangent space and must get NoTangent(), got {_show(ct, 200)}{extra}")
        return None
    if i > 0 and int_only(prim):
        if isinstance(ct, rc.NoTangent) or is_none_ok:
            return None  # an index, axis, size or shape
        node = build_node(prim, ints=True)
    if i == 0 and isinstance(node, _BoundMethodNode):
        prim = rc.unbind(prim)[1]  # type: ignore[index]  # a bound method's tangent is its self's
    problem = tangent_space_problem(prim, ct, strict)
    if problem:
        report.fail(f"the cotangent of {label} is not in its tangent space{problem}: got {_show(ct, 300)}")
        return None
    return node


def _check_cotangent_fd(report: _Report, s: _Setup, problem: Problem, i: int, node: Node,
                        vec: np.ndarray[Any, Any], yvec: np.ndarray[Any, Any], ct: Any) -> None:
    label = _arg_label(i, s.inputs[i])
    if node.n == 0:
        return
    d = s.gen.standard_normal(node.n)
    try:
        jd, err = problem.jvp({i: d}, s.fd)
    except FiniteDifferenceError as exc:
        if i > 0 and int_only(unwrap(s.inputs[i])):
            report.fail(f"{label} is an integer and got the cotangent {_show(ct, 200)}, but f cannot be "
                        f"evaluated with it perturbed ({exc}). An index, axis, size or shape must get "
                        "NoTangent() (not ZeroTangent())")
        else:
            report.fail(f"finite differences failed for {label}: {exc}{_nonfinite_hint(problem, s.y)}. "
                        "Restrict the strategy to points where f is smooth and finite, or pass "
                        "fd=FiniteDifferences(step=...)")
        return
    expected, got = float(yvec @ jd), float(vec @ d)
    scale = max(float(np.sum(np.abs(yvec * jd))), float(np.sum(np.abs(vec * d))))
    bound = s.tol.bound(scale, err * float(np.sum(np.abs(yvec))))
    if abs(expected - got) <= bound:
        return
    lines = [f"the cotangent of {label} disagrees with finite differences:",
             f"along a random direction xdot: <ybar, J xdot> = {_fmt(expected)} by finite differences, "
             f"<xbar, xdot> = {_fmt(got)} from the pullback (difference {abs(expected - got):.3g}, "
             f"tolerance {bound:.3g})"]
    lines.extend(_elementwise(s, problem, i, node, vec, yvec))
    report.fail("\n".join(lines))


def _nonfinite_hint(problem: Problem, y: Any) -> str:
    try:
        values = problem.out_node.values(y)
    except TangentMismatch:
        return ""
    if np.all(np.isfinite(values)):
        return ""
    return " (f's output itself is not finite at this point)"


def _elementwise(s: _Setup, problem: Problem, i: int, node: Node, vec: np.ndarray[Any, Any],
                 yvec: np.ndarray[Any, Any]) -> list[str]:
    if node.n > _MAX_ELEMENTWISE:
        return [f"(too many elements ({node.n}) for an element-wise comparison)"]
    try:
        expected, errs = full_cotangent(problem, i, yvec, s.fd)
    except FiniteDifferenceError as exc:
        return [f"(element-wise finite differences failed: {exc})"]
    scale = max(float(np.max(np.abs(expected), initial=0.0)), float(np.max(np.abs(vec), initial=0.0)))
    bad = [k for k in range(node.n) if abs(expected[k] - vec[k]) > s.tol.bound(scale, errs[k])]
    labels = node.labels(_dof_label(i))
    out = [f"element-wise (expected: finite differences, got: the pullback), {len(bad)} of {node.n} "
           "real coordinates differ:"]
    out.extend(f"  {labels[k]}: expected {_fmt(expected[k])}, got {_fmt(vec[k])}" for k in bad[:_MAX_LISTED])
    if len(bad) > _MAX_LISTED:
        out.append(f"  ... and {len(bad) - _MAX_LISTED} more")
    hint = _hint(expected, vec, node)
    if hint:
        out.append(hint)
    return out


def _hint(expected: np.ndarray[Any, Any], got: np.ndarray[Any, Any], node: Node) -> str:
    if np.allclose(got, -expected, rtol=1e-6, atol=1e-12) and np.any(expected):
        return "hint: the cotangent has the wrong sign"
    x = getattr(node, "x", None)
    if isinstance(x, np.ndarray) and x.ndim == 2 and x.dtype.kind == "f":
        e, g = expected.reshape(x.shape), got.reshape(x.shape)
        if x.shape[0] == x.shape[1] and np.allclose(g, e.T, rtol=1e-6, atol=1e-12):
            return "hint: the cotangent is the transpose of the expected one"
    if np.allclose(got, np.conj(expected), rtol=1e-6, atol=1e-12) and getattr(node, "is_complex", False):
        return "hint: the imaginary parts have the wrong sign (conjugate: xbar = ybar * conj(f'(x)))"
    return ""


def _check_thunk_and_zero(report: _Report, s: _Setup, pullback: Callable[..., Any], ybar: Any,
                          cts: tuple[Any, ...],
                          targets: list[tuple[int, Node, np.ndarray[Any, Any]]]) -> None:
    by_index = {i: (node, vec) for i, node, vec in targets}
    thunked = _invoke(report, "the pullback (given a thunked ybar)", lambda: pullback(rc.Thunk(lambda: ybar)))
    if not isinstance(thunked, tuple) or len(thunked) != len(cts):
        report.fail(f"with a thunked ybar (rc.Thunk) the pullback returned {_show(thunked, 200)}")
    else:
        for i, (ct, ct2) in enumerate(zip(cts, thunked, strict=True)):
            label = _arg_label(i, s.inputs[i])
            if isinstance(rc.unthunk(ct), rc.NoTangent) != isinstance(rc.unthunk(ct2), rc.NoTangent):
                report.fail(f"{label}: a thunked ybar gives {_show(ct2, 200)}, a plain one {_show(ct, 200)}")
            elif i in by_index:
                node, vec = by_index[i]
                try:
                    vec2 = node.vec(ct2, _dof_label(i))
                except TangentMismatch as err:
                    report.fail(f"{label}: with a thunked ybar the cotangent does not fit: {err}")
                    continue
                if not np.allclose(vec2, vec, rtol=1e-9, atol=1e-12 + s.tol.atol):
                    report.fail(f"{label}: a thunked ybar (rc.Thunk) gives {_show(ct2, 200)}, "
                                f"the plain ybar gives {_show(ct, 200)} (call rc.unthunk(ybar) first)")
    for zero in (rc.ZeroTangent(), None):
        zcts = _invoke(report, f"the pullback (given ybar={zero!r})", lambda: pullback(zero))
        if not isinstance(zcts, tuple) or len(zcts) != len(cts):
            report.fail(f"with ybar={zero!r} the pullback returned {_show(zcts, 200)}; expected "
                        f"{len(cts)} zero cotangents")
            continue
        for i, ct in enumerate(zcts):
            ct = rc.unthunk(ct)
            if rc.is_zero(ct) or (isinstance(ct, rc.Tangent) and ct == rc.ZeroTangent()):
                continue
            known = by_index.get(i)
            try:
                nonzero = known is None or bool(np.any(known[0].vec(ct)))
            except TangentMismatch:
                nonzero = True
            if nonzero:
                report.fail(f"{_arg_label(i, s.inputs[i])}: with ybar={zero!r} the pullback gives "
                            f"{_show(ct, 200)}; expected a zero (check rc.is_zero(ybar) and return zeros)")


# --------------------------------------------------------------------------------------------
# test_frule


def _input_tangents(s: _Setup, input_tangents: Any) -> tuple[Any, ...]:
    """``(fdot, xdot_1, ...)``: given ones, or random ones (NoTangent where not differentiable)."""
    if input_tangents is not None:
        given = tuple(input_tangents)
        if len(given) == len(s.args):
            fnode = _f_node(s.f)
            given = (fnode.tangent(np.zeros(fnode.n)) if fnode.n else rc.NoTangent(), *given)
        if len(given) != 1 + len(s.args):
            raise ValueError(f"input_tangents: got {len(given)}, expected {len(s.args)} (one per argument) "
                             f"or {1 + len(s.args)} (f's tangent first)")
        return given
    out = []
    for i, x in enumerate(s.inputs):
        if _is_differentiable_input(i, x):
            node = _node(i, x)
            out.append(node.tangent(s.gen.standard_normal(node.n)))
        else:
            node = _node(i, x)
            out.append(rc.ZeroTangent() if (i > 0 and not node.nodiff and not isinstance(x, NoTangentArg)
                                            and not int_only(x)) else rc.NoTangent())
    return tuple(out)


def _directions(s: _Setup, tangents: tuple[Any, ...], report: _Report) -> tuple[list[Node], dict[int, Any]]:
    nodes: list[Node] = []
    directions: dict[int, np.ndarray[Any, Any]] = {}
    for i, (x, t) in enumerate(zip(s.inputs, tangents, strict=True)):
        if rc.is_zero(rc.unthunk(t)) or isinstance(x, NoTangentArg):
            nodes.append(NoDiffNode(unwrap(x), nodiff=False))
            continue
        node = _node(i, x, ints=i > 0 and int_only(x))
        nodes.append(node)
        try:
            directions[i] = node.vec(t, f"tangent of {_arg_label(i, x)}")
        except TangentMismatch as err:
            raise report.fatal(f"the input tangent does not fit: {err}") from None
    return nodes, directions


def test_frule(f: Any, *args: Any, input_tangents: Sequence[Any] | None = None, rtol: float | None = None,
               atol: float | None = None, fd: FiniteDifferences | None = None,
               frule_f: Callable[..., Any] | None = None, fkwargs: dict[str, Any] | None = None,
               check_zero: bool = True, strict: bool = True, rng: Any = None,
               config: rc.RuleConfig | None = None, **kwargs: Any) -> None:
    """Check the frule of ``f`` at ``args`` against finite differences; ``AssertionError`` if wrong.

    Draws random input tangents (``NoTangent()`` for bools, strings, integers and
    ``rct.no_tangent`` arguments) unless ``input_tangents`` (one per argument, optionally f's
    first) is given, calls ``rc.frule((fdot, *xdots), f, *args)`` (or ``frule_f``, same
    signature) and checks that ``y`` matches ``f(*args)``, that ``ydot`` is in the output's
    tangent space and equals ``J @ xdot`` by finite differences element by element, that zero
    input tangents give a zero ``ydot``, that ``ZeroTangent()`` for one argument (held constant)
    works and acts as zeros, and that nothing was mutated. ``config`` as in ``test_rrule``.

    Example:
        >>> import numpy as np, rulescore as rc, rulescore.testing as rct
        >>> def cube(x): return x ** 3
        >>> @rc.frule.register(cube)
        ... def _(tangents, x):
        ...     xdot = rc.unthunk(tangents[1])
        ...     return cube(x), (rc.ZeroTangent() if rc.is_zero(xdot) else 3 * x ** 2 * xdot)
        >>> rct.test_frule(cube, np.array([1.0, -2.0]))
        >>> rct.test_frule(cube, 1.5 + 0.5j)
    """
    kwargs = {**(fkwargs or {}), **kwargs}
    s = _setup("test_frule", f, args, kwargs, rtol, atol, fd, rng)
    config = None if frule_f is not None else config_for(rc.frule, f, s.primals, config)
    if config is not None:
        frule_f = configured(rc.frule, config)
    report = _Report("frule", f, s.primals, kwargs, _rule_text(rc.frule, f, s.primals, frule_f))
    try:
        _run_frule(report, s, input_tangents, frule_f, check_zero, strict)
    except rc.RuleError as err:
        raise report.fatal(f"rulescore's checking mode rejected the rule: {err}") from err
    report.finish()


test_frule.__test__ = False  # type: ignore[attr-defined]


def _call_frule(report: _Report, s: _Setup, tangents: tuple[Any, ...], frule_f: Callable[..., Any] | None
                ) -> tuple[Any, Any]:
    call = frule_f if frule_f is not None else rc.frule
    res = _invoke(report, "the frule", lambda: call(tangents, s.f, *s.primals, **s.kwargs))
    if res is None:
        raise report.fatal("no frule applies to this call (rc.frule returned None)")
    if not (isinstance(res, tuple) and len(res) == 2):
        raise report.fatal(f"the frule returned {_show(res, 200)}; expected a (y, ydot) pair")
    return res[0], res[1]


def _run_frule(report: _Report, s: _Setup, input_tangents: Sequence[Any] | None,
               frule_f: Callable[..., Any] | None, check_zero: bool, strict: bool) -> None:
    tangents = _input_tangents(s, input_tangents)
    report.context.append(("input tangents (fdot, xdot...)", tangents))
    before = _snapshot(tangents)
    y, ydot = _call_frule(report, s, tangents, frule_f)
    _check_mutations(report, s, "the frule", [("the input tangents", before, tangents)])
    for p in _primal_problems(y, s.y, s.tol):
        report.fail(p)
    ydot = rc.unthunk(ydot)
    if isinstance(ydot, rc.NotImplementedTangent):
        _check_implemented_directions(report, s, tangents, frule_f, check_zero, strict)
        return
    _check_batched(report, s, tangents, ydot, frule_f)
    if frule_f is None and _nondiff_rule(rc.frule, s.f, s.primals):
        if not isinstance(ydot, rc.NoTangent):
            report.fail("the rule is declared non-differentiable, so ydot must be NoTangent(), "
                        f"got {_show(ydot)}")
        return
    problem_text = tangent_space_problem(s.y, ydot, strict)
    if problem_text:
        report.fail(f"ydot is not in the output's tangent space{problem_text}: got {_show(ydot, 300)}")
    out_node = build_node(s.y, ints=True)
    try:
        got = out_node.vec(ydot, "ydot")
    except TangentMismatch as err:
        raise report.fatal(f"ydot does not fit the output: {err}") from None
    nodes, directions = _directions(s, tangents, report)
    problem = make_problem(s.f, s.primals, s.kwargs, nodes, s.y, s.tol.rtol)
    try:
        expected, fd_err = problem.jvp(directions, s.fd)
    except FiniteDifferenceError as exc:
        raise report.fatal(f"finite differences failed: {exc}{_nonfinite_hint(problem, s.y)}. Restrict the "
                           "strategy to points where f is smooth and finite, or pass "
                           "fd=FiniteDifferences(step=...)") from None
    scale = max(float(np.max(np.abs(expected), initial=0.0)), float(np.max(np.abs(got), initial=0.0)))
    bound = s.tol.bound(scale, fd_err)
    bad = [k for k in range(out_node.n) if not abs(expected[k] - got[k]) <= bound]
    if bad:
        labels = out_node.labels("ydot")
        lines = [f"ydot disagrees with finite differences (J @ xdot) in {len(bad)} of {out_node.n} real "
                 f"coordinates (tolerance {bound:.3g}); expected: finite differences, got: the frule"]
        lines.extend(f"  {labels[k]}: expected {_fmt(expected[k])}, got {_fmt(got[k])}"
                     for k in bad[:_MAX_LISTED])
        if len(bad) > _MAX_LISTED:
            lines.append(f"  ... and {len(bad) - _MAX_LISTED} more")
        hint = _hint(expected, got, out_node)
        if hint:
            lines.append(hint)
        report.fail("\n".join(lines))
    if check_zero and directions:
        zeros = tuple(t if rc.is_zero(rc.unthunk(t)) else rc.ZeroTangent() for t in tangents)
        _, zdot = _call_frule(report, s, zeros, frule_f)
        zdot = rc.unthunk(zdot)
        if not rc.is_zero(zdot):
            try:
                nonzero = bool(np.any(out_node.vec(zdot)))
            except TangentMismatch:
                nonzero = True
            if nonzero:
                report.fail(f"with zero input tangents the frule gives ydot = {_show(zdot, 200)}; expected a "
                            "zero (check rc.is_zero on the tangents)")
    _check_partly_zero(report, s, tangents, frule_f, out_node)


def _check_implemented_directions(report: _Report, s: _Setup, tangents: tuple[Any, ...],
                                  frule_f: Callable[..., Any] | None, check_zero: bool, strict: bool) -> None:
    """The frule gave ``rc.not_implemented`` for the input tangents: check it along each argument's
    tangent alone, skipping the arguments whose derivative it declares not implemented."""
    varied = [i for i, t in enumerate(tangents[1:], start=1) if not rc.is_zero(rc.unthunk(t))]
    if len(varied) < 2:
        return  # the one varied argument's derivative is not implemented: skipped
    for i in varied:
        alone = tuple(t if k in (0, i) else rc.ZeroTangent() for k, t in enumerate(tangents))
        _, ydot = _call_frule(report, s, alone, frule_f)
        if not isinstance(rc.unthunk(ydot), rc.NotImplementedTangent):
            _run_frule(report, s, alone, frule_f, check_zero, strict)


def _check_partly_zero(report: _Report, s: _Setup, tangents: tuple[Any, ...],
                       frule_f: Callable[..., Any] | None, out_node: Any) -> None:
    """The frule with one argument's tangent ``ZeroTangent()`` (what an engine gives for an
    argument held constant) runs, and agrees with the frule given zeros of that argument's shape."""
    varied = [i for i, (t, x) in enumerate(zip(tangents[1:], s.primals, strict=True), start=1)
              if not rc.is_zero(rc.unthunk(t)) and zeros_like_primal(x, None) is not None]
    if len(varied) < 2:
        return  # one varied argument: zero tangents are the all-zero case, checked above
    for i in varied:
        zero = (*tangents[:i], rc.ZeroTangent(), *tangents[i + 1:])
        dense = (*tangents[:i], zeros_like_primal(s.primals[i - 1], None), *tangents[i + 1:])
        call = frule_f if frule_f is not None else rc.frule
        try:
            _, got = call(zero, s.f, *s.primals, **s.kwargs)
        except Exception as err:  # noqa: BLE001 - reported: the engines make this call
            report.fail(f"the frule fails when the tangent of argument {i} is ZeroTangent() (what an AD "
                        f"engine passes for an argument held constant): {type(err).__name__}: {err}. "
                        "Register it with @rc.frule.register (without zero_tangents=True: it then gets "
                        "zeros of the argument's shape), or handle the zero (rc.is_zero)")
            continue
        _, want = _call_frule(report, s, dense, frule_f)
        if isinstance(rc.unthunk(got), rc.NotImplementedTangent) or \
                isinstance(rc.unthunk(want), rc.NotImplementedTangent):
            continue  # rc.not_implemented for another argument: checked along each argument alone
        try:
            got_v, want_v = out_node.vec(rc.unthunk(got), "ydot"), out_node.vec(rc.unthunk(want), "ydot")
        except TangentMismatch as err:
            report.fail(f"with the tangent of argument {i} ZeroTangent() the frule gives a ydot that does "
                        f"not fit the output: {err}")
            continue
        scale = float(np.max(np.abs(want_v), initial=0.0))
        if not np.all(np.abs(got_v - want_v) <= s.tol.bound(scale)):
            report.fail(f"with the tangent of argument {i} ZeroTangent() the frule gives ydot = "
                        f"{_show(got, 200)}, but {_show(want, 200)} with zeros of that argument's shape: a "
                        "zero tangent must act as zeros")


def _stack(x: Any, t1: Any, t2: Any) -> Any:
    """Two directions' tangents of ``x`` as one ``rc.Batched`` (zeros stay zero); None if not dense."""
    t1, t2 = rc.unthunk(t1), rc.unthunk(t2)
    if rc.is_zero(t1) and rc.is_zero(t2):
        return t1
    dense = (np.ndarray, np.generic, int, float, complex)
    if not (isinstance(t1, dense) and isinstance(t2, dense)) or \
            not np.shape(t1) == np.shape(t2) == np.shape(x):
        return None
    return rc.Batched(np.stack([np.asarray(t1), np.asarray(t2)]))


def _check_batched(report: _Report, s: _Setup, tangents: tuple[Any, ...], ydot: Any,
                   frule_f: Callable[..., Any] | None) -> None:
    """Given ``rc.Batched`` tangents (two directions) the frule raises, or agrees with itself per direction.

    A forward engine pushing several directions at once relies on this: an frule that cannot
    batch must fail (any error), never return a tangent mixing directions. Checked for outputs
    that are arrays or numbers (the ones a forward engine batches)."""
    if not isinstance(s.y, (np.ndarray, np.generic, int, float, complex)):
        return
    second = _input_tangents(s, None)
    stacks = [_stack(x, t1, t2) for x, t1, t2 in zip(s.inputs, tangents, second, strict=True)]
    if any(t is None for t in stacks[1:]) or all(rc.is_zero(t) for t in stacks[1:]):
        return
    call = frule_f if frule_f is not None else rc.frule
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            _, batched = call((tangents[0], *stacks[1:]), s.f, *s.primals, **s.kwargs)
        batched = rc.unthunk(batched)
    except Exception:  # noqa: BLE001 - an frule without batching support fails; the engine falls back
        return
    _, ydot2 = _call_frule(report, s, second, frule_f)
    expected = [ydot, rc.unthunk(ydot2)]
    if type(batched) is rc.Batched and batched.directions == 2:
        shape = np.shape(s.y)
        got = [np.broadcast_to(batched.data[k], shape) if batched.ndim <= len(shape) else None
               for k in range(2)]
    elif rc.is_zero(batched) or isinstance(batched, (np.ndarray, np.generic, int, float, complex)):
        got = [batched, batched]
    else:
        report.fail(f"given rulescore.Batched tangents the frule returned {_show(batched, 200)}; expected a "
                    "Batched (or an error: the engine then pushes one direction at a time)")
        return
    for k, (e, g) in enumerate(zip(expected, got, strict=True)):
        e_arr = np.zeros(np.shape(s.y)) if rc.is_zero(e) else np.asarray(e)
        g_arr = np.zeros(np.shape(s.y)) if rc.is_zero(g) else np.asarray(g) if g is not None else None
        scale = float(np.max(np.abs(e_arr), initial=0.0)) if e_arr.dtype.kind in "fciu" else 0.0
        if g_arr is None or g_arr.shape != e_arr.shape or not np.all(
                np.abs(g_arr - e_arr) <= s.tol.bound(scale)):
            report.fail(f"given rulescore.Batched tangents the frule disagrees with itself in direction {k}: "
                        f"expected (one direction at a time) {_show(e, 200)}, got {_show(g, 200)}. An frule "
                        "that cannot take batched tangents must raise (rulescore.NotBatchable)")
            return


# --------------------------------------------------------------------------------------------
# frule / rrule consistency


def test_frule_rrule(f: Any, *args: Any, rtol: float | None = None, atol: float | None = None,
                     frule_f: Callable[..., Any] | None = None, rrule_f: Callable[..., Any] | None = None,
                     fkwargs: dict[str, Any] | None = None, rng: Any = None, **kwargs: Any) -> None:
    """Check that the frule and the rrule of ``f`` are adjoint: ``<J v, u> == <v, J^T u>``.

    ``v`` are random input tangents, ``u`` a random output cotangent; ``J v`` comes from the
    frule (or ``frule_f``), ``J^T u`` from the rrule's pullback (or ``rrule_f``). No finite
    differences: this catches rules that disagree with each other.

    Example:
        >>> import numpy as np, rulescore as rc, rulescore.testing as rct
        >>> def scale3(x): return 3.0 * x
        >>> rc.scalar_rule(scale3, lambda x: 3.0)
        >>> rct.test_frule_rrule(scale3, np.array([1.0, 2.0]))
    """
    kwargs = {**(fkwargs or {}), **kwargs}
    s = _setup("test_frule_rrule", f, args, kwargs, rtol, atol, None, rng)
    rule = (f"{_rule_text(rc.frule, f, s.primals, frule_f)}; "
            f"{_rule_text(rc.rrule, f, s.primals, rrule_f)}")
    report = _Report("frule/rrule consistency", f, s.primals, kwargs, rule)
    if (frule_f is None and _nondiff_rule(rc.frule, f, s.primals)) or \
            (rrule_f is None and _nondiff_rule(rc.rrule, f, s.primals)):
        return
    try:
        tangents = _input_tangents(s, None)
        _, ydot = _call_frule(report, s, tangents, frule_f)
        _, pullback = _call_rrule(report, s, rrule_f)
        out_node = build_node(s.y, ints=True)
        u = out_node.tangent(s.gen.standard_normal(out_node.n))
        cts = _invoke(report, "the pullback", lambda: pullback(u))
    except rc.RuleError as err:
        raise report.fatal(f"rulescore's checking mode rejected a rule: {err}") from err
    report.context.append(("input tangents v (fdot, xdot...)", tangents))
    report.context.append(("output cotangent u", u))
    if not isinstance(cts, tuple) or len(cts) != 1 + len(s.args):
        raise report.fatal(f"the pullback returned {_show(cts, 200)}; expected {1 + len(s.args)} cotangents")
    try:
        uvec = out_node.vec(u)
        lhs_terms = out_node.vec(ydot, "ydot") * uvec
        nodes, directions = _directions(s, tangents, report)
        rhs_terms = [nodes[i].vec(cts[i], _dof_label(i)) * v for i, v in directions.items()]
    except TangentMismatch as err:
        raise report.fatal(f"a tangent does not fit its primal: {err}") from None
    lhs = float(np.sum(lhs_terms))
    rhs = float(sum(float(np.sum(t)) for t in rhs_terms))
    scale = max(float(np.sum(np.abs(lhs_terms))), sum(float(np.sum(np.abs(t))) for t in rhs_terms))
    bound = s.tol.bound(scale)
    if not abs(lhs - rhs) <= bound:
        report.fail(f"the frule and the rrule disagree: <J v, u> = {_fmt(lhs)} (frule) but <v, J^T u> = "
                    f"{_fmt(rhs)} (rrule); difference {abs(lhs - rhs):.3g}, tolerance {bound:.3g}")
    report.finish()


test_frule_rrule.__test__ = False  # type: ignore[attr-defined]


# --------------------------------------------------------------------------------------------
# test_scalar


def test_scalar(f: Any, x: Any, rtol: float | None = None, atol: float | None = None,
                fd: FiniteDifferences | None = None, frule_f: Callable[..., Any] | None = None,
                rrule_f: Callable[..., Any] | None = None, **kwargs: Any) -> None:
    """Check the frule and the rrule of a scalar function at a real or complex ``x``.

    Uses unit tangents (``1`` and, for complex ``x``, ``1j``) and unit output cotangents (``1``
    and, for a complex output, ``1j``), and checks frule/rrule consistency.

    Example:
        >>> import math, rulescore.testing as rct
        >>> rct.test_scalar(math.sin, 0.5)
        >>> import numpy as np
        >>> rct.test_scalar(np.exp, 0.5 + 0.25j)  # doctest: +SKIP
    """
    y = f(x, **kwargs)
    x_dirs: list[Any] = [1.0, 1.0j] if isinstance(x, (complex, np.complexfloating)) else [1.0]
    y_dirs: list[Any] = [1.0, 1.0j] if isinstance(y, (complex, np.complexfloating)) else [1.0]
    xt = rc.ProjectTo(x)
    yt = rc.ProjectTo(y)
    common: dict[str, Any] = {"rtol": rtol, "atol": atol, "fkwargs": kwargs}
    for d in x_dirs:
        test_frule(f, x, input_tangents=(xt(d),), fd=fd, frule_f=frule_f, **common)
    for d in y_dirs:
        test_rrule(f, x, output_tangent=yt(d), fd=fd, rrule_f=rrule_f, **common)
    test_frule_rrule(f, x, frule_f=frule_f, rrule_f=rrule_f, **common)


test_scalar.__test__ = False  # type: ignore[attr-defined]
