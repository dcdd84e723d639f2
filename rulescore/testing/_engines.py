"""Adapters that let ``test_rrule`` / ``test_frule`` check an AD engine instead of a rule."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import importlib.metadata
import importlib.util
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import rulescore as rc
from rulescore.interop._host import Structure, flatten


def rrule_from_pullback(pullback: Callable[..., Any]) -> Callable[..., Any]:
    """An ``rrule_f`` for ``test_rrule`` from an engine's ``pullback(f, *args) -> (y, back)``,
    where ``back(ybar)`` returns one gradient per argument (``zygotepy.pullback``'s signature).

    Keyword arguments are bound with ``functools.partial``; the engine's cotangent for ``f``
    itself is ``NoTangent()``; a thunked ybar is evaluated and a zero ybar short-circuits to
    zeros. Use ``strict=False`` in ``test_rrule``: engines return user-facing values (``None``,
    plain tuples) rather than ``rc.Tangent``.

    Example:
        >>> import numpy as np, rulescore.testing as rct
        >>> def by_hand(f, *args):   # a toy "engine" that knows only np.sin
        ...     (x,) = args
        ...     return f(x), lambda ybar: (ybar * np.cos(x),)
        >>> rct.test_rrule(np.sin, np.array([0.1, 0.2]), rrule_f=rct.rrule_from_pullback(by_hand),
        ...                strict=False)
    """

    def engine_rrule(f: Any, *args: Any, **kwargs: Any) -> Any:
        g = functools.partial(f, **kwargs) if kwargs else f
        y, back = pullback(g, *args)

        def engine_pullback(ybar: Any) -> Any:
            ybar = rc.unthunk(ybar)
            if rc.is_zero(ybar):
                return (rc.NoTangent(), *(rc.ZeroTangent() for _ in args))
            grads = back(ybar)
            if grads is None:
                grads = (None,) * len(args)
            return (rc.NoTangent(), *tuple(grads))

        return y, engine_pullback

    engine_rrule.__name__ = engine_rrule.__qualname__ = f"rrule_from_pullback({_name(pullback)})"
    return engine_rrule


def frule_from_jvp(jvp: Callable[..., Any]) -> Callable[..., Any]:
    """An ``frule_f`` for ``test_frule`` from an engine's ``jvp(f, args, tangents) -> (y, ydot)``
    (one tangent per argument; ``f``'s own tangent is dropped).

    Example:
        >>> import numpy as np, rulescore.testing as rct
        >>> def by_hand(f, args, tangents):   # a toy forward-mode "engine" for np.sin
        ...     return f(*args), np.cos(args[0]) * tangents[0]
        >>> rct.test_frule(np.sin, np.array([0.1, 0.2]), frule_f=rct.frule_from_jvp(by_hand))
    """

    def engine_frule(tangents: Sequence[Any], f: Any, *args: Any, **kwargs: Any) -> Any:
        g = functools.partial(f, **kwargs) if kwargs else f
        return jvp(g, args, tuple(tangents[1:]))

    engine_frule.__name__ = engine_frule.__qualname__ = f"frule_from_jvp({_name(jvp)})"
    return engine_frule


def _name(f: Any) -> str:
    return str(getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or type(f).__name__)


# -- one rule, every installed AD system ------------------------------------------------------------

#: The AD systems ``test_rrule(..., engines=...)`` knows: the engines registered under the
#: ``rulescore.engines`` entry point (zygotepy) and the exporters in ``rulescore.interop``.
SYSTEMS = ("zygotepy", "jax", "torch", "autograd")


class _System:
    """An AD system seen from NumPy: ``lift`` a NumPy function into it, ``vjp`` there, convert."""

    def __init__(self, name: str, lift: Callable[[Any], Any], vjp: Callable[..., Any],
                 to_sys: Callable[[Any], Any], to_np: Callable[[Any], Any], conjugate: bool,
                 context: Callable[[], Any] = contextlib.nullcontext,
                 conj: Callable[[Any], Any] = np.conj) -> None:
        self.name, self.lift, self.vjp, self.to_sys, self.to_np = name, lift, vjp, to_sys, to_np
        self.conjugate = conjugate  # complex cotangents are the conjugate of rulescore's
        self.context = context
        self.conj = conj  # the system's own conjugation (its traced arrays may lack a .conj method)

    def _conj(self, x: Any) -> Any:
        return np.conj(x) if self.conjugate and np.iscomplexobj(x) else x

    def conj_in_system(self, x: Any) -> Any:
        """``x`` (an array of the system, maybe traced) in the other complex convention."""
        return self.conj(x) if self.conjugate and np.iscomplexobj(x) else x

    def pullback(self, fn_sys: Any, args: tuple[Any, ...], constant: Sequence[int] = ()) -> tuple[Any, Any]:
        """``(y, back)`` in NumPy for a function of the system. The float leaves of every
        argument (inside tuples, lists, dicts and dataclasses too) are the system's inputs; other
        leaves, and the arguments at the positions ``constant``, are closed over (no gradient)."""
        flat = [flatten(a) for a in args]
        dyn = [(i, j) for i, (leaves, _) in enumerate(flat) if i not in constant
               for j, v in enumerate(leaves) if _is_float_tree(v)]

        def partial_fn(*d: Any) -> Any:
            leaves = [list(part) for part, _ in flat]
            for (i, j), v in zip(dyn, d, strict=True):
                leaves[i][j] = v
            return fn_sys(*(s.rebuild(part) for part, (_, s) in zip(leaves, flat, strict=True)))

        with self.context():
            y, back = self.vjp(partial_fn, *(self.to_sys(flat[i][0][j]) for i, j in dyn))

        y_np = self.to_np(y)

        def back_np(ybar: Any) -> tuple[Any, ...]:
            ybar = _plain(ybar, y_np)
            with self.context():
                grads = back(self.to_sys(_tree_map(self._conj, ybar)))
            leaf_grads: list[list[Any]] = [[rc.NoTangent()] * len(part) for part, _ in flat]
            for (i, j), g in zip(dyn, grads, strict=True):
                leaf_grads[i][j] = _like(_tree_map(self._conj, self.to_np(g)), flat[i][0][j])
            return tuple(None if not any(i == k for k, _ in dyn) else
                         _like(s.rebuild(part_g), a) if _is_float_tree(a) else _tangent_of(s, part_g)
                         for i, (a, part_g, (_, s)) in enumerate(zip(args, leaf_grads, flat, strict=True)))

        return y_np, back_np


def _tangent_of(s: Structure, leaves: list[Any]) -> Any:
    """Leaf cotangents put back in the structure ``s``, as the tangent of a mixed container:
    ``Tangent[T]`` for a dataclass, the container itself otherwise."""
    it = iter(leaves)

    def build(node: Structure) -> Any:
        if node.kind is None:
            return next(it)
        items = [build(c) for c in node.children]
        kind: Any = node.kind
        if dataclasses.is_dataclass(kind):
            return rc.Tangent[kind](**dict(zip(node.keys, items, strict=True)))
        return Structure(node.kind, node.keys, tuple(Structure(None) for _ in items)).rebuild(items)

    return build(s)


def _plain(t: Any, like: Any) -> Any:
    """A rulescore tangent of ``like`` as plain containers and arrays (zeros made explicit)."""
    t = rc.unthunk(t)
    if rc.is_zero(t):
        return _tree_map(np.zeros_like, like)
    if isinstance(like, (tuple, list, dict)):
        keys = like.keys() if isinstance(like, dict) else range(len(like))
        parts = {k: _plain(t[k] if not isinstance(t, dict) else t.get(k), like[k]) for k in keys}
        return parts if isinstance(like, dict) else _rebuilt(like, [parts[k] for k in keys])
    return t


def _like(g: Any, primal: Any) -> Any:
    """``g`` (arrays from an AD system) in the form of ``primal``: scalars for scalars."""
    if g is None:
        return None
    if isinstance(primal, dict):
        return {k: _like(g[k], v) for k, v in primal.items()}
    if isinstance(primal, (tuple, list)):
        return _rebuilt(primal, [_like(a, b) for a, b in zip(g, primal, strict=True)])
    if isinstance(primal, np.ndarray):
        return np.asarray(g)
    return type(primal)(np.asarray(g)[()])


def _rebuilt(like: Any, items: list[Any]) -> Any:
    """A tuple or list of ``like``'s type holding ``items`` (a named tuple takes them as fields)."""
    return type(like)(*items) if hasattr(like, "_fields") else type(like)(items)


def _tree_map(fn: Callable[[Any], Any], x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _tree_map(fn, v) for k, v in x.items()}
    if isinstance(x, (tuple, list)):
        return _rebuilt(x, [_tree_map(fn, v) for v in x])
    return None if x is None else fn(x)


def _is_float_tree(x: Any) -> bool:
    if isinstance(x, dict):
        return bool(x) and all(_is_float_tree(v) for v in x.values())
    if isinstance(x, (tuple, list)):
        return bool(x) and all(_is_float_tree(v) for v in x)
    return isinstance(x, (float, complex, np.floating, np.complexfloating)) or (
        isinstance(x, np.ndarray) and np.issubdtype(x.dtype, np.inexact))


def _is_double(x: Any) -> bool:
    if isinstance(x, dict):
        return all(_is_double(v) for v in x.values())
    if isinstance(x, (tuple, list)):
        return all(_is_double(v) for v in x)
    return np.result_type(x) in (np.float64, np.complex128)


def _unmarked(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """``args`` with ``rct.no_tangent`` markers replaced by their values."""
    from rulescore.testing._vec import NoTangentArg

    return tuple(a.value if isinstance(a, NoTangentArg) else a for a in args)


def _system(name: str) -> _System | None:
    """The adapter for ``name``, or ``None`` when that system is not installed."""
    if name == "zygotepy":
        eps = [ep for ep in importlib.metadata.entry_points(group="rulescore.engines") if ep.name == name]
        if not eps:
            return None
        engine = eps[0].load()
        return _System(name, lambda f: f, engine.pullback, lambda x: x, lambda x: x, conjugate=False)
    module = {"jax": "jax", "torch": "torch", "autograd": "autograd"}[name]
    if importlib.util.find_spec(module) is None:
        return None
    interop = importlib.import_module(f"rulescore.interop.{name}")
    if name == "jax":
        import jax

        return _System(name, interop.wrap, jax.vjp, lambda x: _tree_map(jax.numpy.asarray, x),
                       lambda x: _tree_map(np.asarray, x), conjugate=True,
                       context=lambda: jax.enable_x64(True), conj=jax.numpy.conj)
    if name == "torch":
        import torch

        def torch_vjp(fn: Any, *xs: Any) -> Any:
            return torch.func.vjp(fn, *xs)

        return _System(name, interop.wrap, torch_vjp,
                       lambda x: _tree_map(lambda v: torch.as_tensor(np.asarray(v)), x),
                       lambda x: _tree_map(lambda t: t.detach().cpu().resolve_conj().numpy(), x),
                       conjugate=False)
    import autograd
    import autograd.builtins as ab
    import autograd.numpy as anp

    def traced(x: Any) -> Any:  # containers autograd differentiates through (a plain tuple is constant)
        if isinstance(x, dict):
            return ab.dict({k: traced(v) for k, v in x.items()})
        if isinstance(x, (tuple, list)):
            return ab.tuple(tuple(traced(v) for v in x))
        return x

    def autograd_vjp(fn: Any, *xs: Any) -> Any:
        back, y = autograd.make_vjp(lambda packed: traced(fn(*packed)))(tuple(xs))
        return y, back

    return _System(name, interop.wrap, autograd_vjp, lambda x: x, lambda x: x, conjugate=True, conj=anp.conj)


def installed_systems() -> tuple[str, ...]:
    """The names in :data:`SYSTEMS` that are installed here.

    Example:
        >>> import rulescore.testing as rct
        >>> set(rct.installed_systems()) <= {"zygotepy", "jax", "torch", "autograd"}
        True
    """
    return tuple(n for n in SYSTEMS if _system(n) is not None)


def check_systems(f: Any, args: tuple[Any, ...], kwargs: dict[str, Any], systems: Any,
                  second_order: bool = True, **options: Any) -> None:
    """Check ``f``'s rrule as each AD system in ``systems`` consumes it, against finite
    differences: the system's gradient (first order) and, for float arguments, the gradient of
    its gradient (the pullback differentiated). ``systems``: ``"all"`` (every installed one), or
    names from :data:`SYSTEMS` (each must be installed). ``options`` go to ``test_rrule``.

    Example:
        >>> import numpy as np, rulescore.testing as rct
        >>> rct.check_systems(np.tanh, (np.array([0.1, 0.7]),), {}, ["zygotepy"])
    """
    from rulescore.testing._testers import _nondiff_rule
    from rulescore.testing._testers import test_rrule as check_rrule
    from rulescore.testing._vec import NoTangentArg

    if systems == "all":
        names = installed_systems()
    else:
        names = (systems,) if isinstance(systems, str) else tuple(systems)
    if not _is_float_tree(f(*_unmarked(args), **kwargs)):
        return  # an integer (or other non-differentiable) output: nothing for the systems to check
    for name in names:
        system = _system(name)
        if system is None:
            raise ValueError(f"test_rrule(..., engines={systems!r}): {name} is not installed")

        lifted = functools.partial(system.lift(f), **kwargs)
        constant = [i for i, a in enumerate(args) if isinstance(a, NoTangentArg)]  # rct.no_tangent
        if _nondiff_rule(rc.rrule, f, _unmarked(args)):
            _check_zero_gradients(f, _unmarked(args), kwargs, system, lifted)
            continue

        def system_rrule(fn: Any, *a: Any, _s: _System = system, _fn: Any = lifted, **_kw: Any) -> Any:
            y, back = _s.pullback(_fn, a, constant)
            return _like(y, f(*a, **kwargs)), lambda ybar: (rc.NoTangent(), *back(ybar))

        system_rrule.__name__ = system_rrule.__qualname__ = f"{name}.vjp(wrap({_name(f)}))"
        check_rrule(f, *args, rrule_f=system_rrule, strict=False, check_thunks=False, fkwargs=kwargs,
                    **options)
        if second_order and all(_is_float_tree(a) for a in args):
            _check_second_order(f, args, kwargs, system, lifted, options)


def _check_zero_gradients(f: Any, args: tuple[Any, ...], kwargs: dict[str, Any], system: _System,
                          lifted: Callable[..., Any]) -> None:
    """A rule declared non-differentiable (``rc.non_differentiable``): the system gives ``f``'s
    value and zero gradients (finite differences may see a slope the rule chose to ignore)."""
    y, back = system.pullback(lifted, args)
    for got, want in zip(_leaves(y), _leaves(f(*args, **kwargs)), strict=True):
        np.testing.assert_allclose(got, want, err_msg=f"{system.name}: {_name(f)}'s value")
    ybar = _tree_map(np.ones_like, y)
    for i, g in enumerate(back(ybar)):
        for leaf in _leaves(g):
            assert not np.any(np.asarray(leaf)), (
                f"{system.name}: {_name(f)} is declared non-differentiable, but argument {i + 1} got "
                f"the gradient {leaf!r}")


def _leaves(x: Any) -> list[Any]:
    if isinstance(x, dict):
        return [v for item in x.values() for v in _leaves(item)]
    if isinstance(x, (tuple, list)):
        return [v for item in x for v in _leaves(item)]
    return [] if x is None else [x]


def _check_second_order(f: Any, args: tuple[Any, ...], kwargs: dict[str, Any], system: _System,
                        lifted: Callable[..., Any], options: dict[str, Any]) -> None:
    """The system's pullback of ``f`` as a function of ``(args, ybar)``, differentiated by the
    system, against finite differences of rulescore's own pullback (the same function once the
    first-order check passed, and NumPy-cheap to evaluate: one system call per check)."""
    from rulescore.testing._testers import test_rrule as check_rrule

    y = f(*args, **kwargs)
    if not _is_float_tree(y) or not all(_is_double(a) for a in (*args, y)):
        return  # second differences need double precision
    rng = np.random.default_rng(1)
    ybar = _like(_tree_map(lambda v: rng.standard_normal(np.shape(v)).astype(np.result_type(v)), y), y)

    def gradient_sys(*a: Any) -> Any:
        """f's gradient in the system, in rulescore's complex convention (conjugated there)."""
        _, back = system.vjp(lifted, *a[:-1])
        # element by element: under a second system level the cotangents arrive as the
        # system's own traced sequence (autograd's SequenceBox), not a tuple
        return tuple(_tree_map(system.conj_in_system, g)
                     for g in back(_tree_map(system.conj_in_system, a[-1])))

    def gradient(*a: Any) -> Any:
        """f's gradient, as rulescore's rrule computes it (NumPy in, NumPy out)."""
        _, back = rc.rrule(f, *a[:-1], **kwargs)
        return tuple(_like(_plain(g, x), x) for g, x in zip(back(a[-1])[1:], a[:-1], strict=True))

    def second_rrule(fn: Any, *a: Any) -> Any:
        yy, back = system.pullback(gradient_sys, a)
        return yy, lambda gbar: (rc.NoTangent(), *back(gbar))

    gradient.__name__ = gradient.__qualname__ = f"{system.name}.grad({_name(f)})"
    second_rrule.__name__ = f"{system.name}.vjp({system.name}.grad({_name(f)}))"
    check_rrule(gradient, *args, ybar, rrule_f=second_rrule, strict=False, check_thunks=False,
                **{k: v for k, v in options.items() if k in ("rtol", "atol", "rng", "fd")})


_TEST_RRULE_OPTIONS = ("output_tangent", "rtol", "atol", "fd", "rrule_f", "fkwargs", "check_thunks", "strict",
                       "rng", "config")


def test_rrule(f: Any, *args: Any, engines: Any = None, **kwargs: Any) -> None:
    """``test_rrule`` of :mod:`rulescore.testing._testers` (the rule against finite differences),
    then, with ``engines``, the same rule as each AD system consumes it: ``"all"`` checks every
    installed one (zygotepy and ``rulescore.interop``'s JAX, PyTorch and autograd exporters),
    first and second order (see :func:`check_systems`); or a name or list of names.

    Example:
        >>> import numpy as np, rulescore.testing as rct
        >>> rct.test_rrule(np.tanh, np.array([0.1, 0.7]), engines="all")
    """
    from rulescore.testing import _testers

    _testers.test_rrule(f, *args, **kwargs)
    if engines:
        options = {k: kwargs[k] for k in ("rtol", "atol", "fd", "rng") if k in kwargs}
        fkwargs = {**kwargs.get("fkwargs", {}),
                   **{k: v for k, v in kwargs.items() if k not in _TEST_RRULE_OPTIONS}}
        check_systems(f, args, fkwargs, engines, **options)


test_rrule.__test__ = False  # type: ignore[attr-defined]
