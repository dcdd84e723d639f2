"""The part every exporter shares: a function on flat NumPy leaves with derivatives from rules.

An exporter (JAX, PyTorch, autograd) flattens the user's arguments into leaves, hands NumPy
arrays to a :class:`HostOp`, and turns the op's ``fun`` / ``jvp`` / ``vjp`` into its own
system's primitive. ``vjp`` comes from the registered rrule and ``jvp`` from the frule; the
op's ``vjp_op`` is the pullback itself as another :class:`HostOp` (for derivatives of any
order), whose own derivatives come from an installed AD engine (entry-point group
``rulescore.engines``) differentiating the pullback.

Tangent conventions at the boundary: ``None`` / ``ZeroTangent()`` / ``NoTangent()`` become
arrays of zeros (or are skipped for non-differentiable leaves), thunks are evaluated,
``Tangent[tuple]`` / ``Tangent[dict]`` / tuples / dicts are read leaf by leaf.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import numbers
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rulescore._arithmetic import is_zero
from rulescore._contract import pull_back, rrule_pair
from rulescore._namespace import array_namespace
from rulescore._not_implemented import NotImplementedTangent
from rulescore._registry import frule, rrule
from rulescore._thunks import unthunk
from rulescore._zeros import NoTangent

__all__ = ["LEAF", "WEAK", "EngineMissingError", "HostOp", "NativeAttempt", "NativeTierWarning", "OpCache",
           "Structure", "as_host_leaf", "check_outputs", "engine", "explanation", "flatten", "is_dynamic",
           "leaf_tangents", "merge_leaves", "needed_cotangents", "op_name", "reject_hidden_arrays",
           "remember", "rule_op", "rule_primal", "tier_reason", "value_key"]


Spec = tuple[tuple[int, ...], Any]
#: ``xs -> (output leaves, pullback from output cotangents to input cotangents)``
PrimalAndPullback = Callable[[Sequence[Any]], tuple[list[Any], Callable[[Sequence[Any]], list[Any]]]]


class EngineMissingError(RuntimeError):
    """Higher derivatives of a host (NumPy) rule need an AD engine, and none is installed."""


class NativeTierWarning(UserWarning):
    """``wrap(f)`` chose the host tier although ``f`` runs on the system's arrays: its rule does
    not (the warning says why). Silence it with ``native=False``; fix the rule to run natively."""


@dataclass(frozen=True)
class NativeAttempt:
    """Why a native tier was not found: ``error`` raised by ``f`` (``function_ran`` false: ``f``
    needs NumPy values, the host tier is its tier) or by its rule after ``f`` itself ran on the
    system's arrays (``function_ran`` true: the author meant the native tier, and it broke)."""

    error: Exception
    function_ran: bool
    rule_error: Exception | None = None  # when f did not run: why its rrule's primal did not either

    def refusal(self, system: str, name: str) -> str:
        """The message of ``wrap(f, native=True)`` when the native tier failed."""
        part = f"the rule of {name}" if self.function_ran else name
        return (f"rulescore.interop.{system}.wrap({name}, native=True): {part} does not run on {system} "
                f"arrays ({type(self.error).__name__}: {self.error}); write {name} and its rules with "
                "rc.array_namespace (rc.project works on any array), or drop native=True for the host tier")

    def reason(self, system: str, name: str) -> str:
        """Why ``wrap(f)`` runs ``f`` on the host: the sentence :func:`tier_reason` gives."""
        error = f"{type(self.error).__name__}: {self.error}"
        if self.function_ran:
            return (f"{name} runs on {system} arrays but its rules do not ({error}); write the rules with "
                    "rc.array_namespace for the native tier")
        rule = "" if self.rule_error is None else \
            f", nor does its rrule ({type(self.rule_error).__name__}: {self.rule_error})"
        return (f"{name} does not run on {system} arrays ({error}){rule}: a NumPy function, run on the host "
                f"with NumPy values; write {name} and its rules with rc.array_namespace for the native tier")

    def warn(self, system: str, name: str) -> None:
        """Warn (:class:`NativeTierWarning`) when ``f`` ran on the system's arrays but its rule did
        not: the silent alternative is a host callback several times slower."""
        if self.function_ran:
            warnings.warn(NativeTierWarning(
                f"rulescore.interop.{system}.wrap({name}): {name} runs on {system} arrays but its rules do "
                f"not ({type(self.error).__name__}: {self.error}), so it runs on the host tier (a NumPy "
                "callback: slower, no accelerator). Write the rules with rc.array_namespace, or pass "
                "native=False to choose the host tier"), stacklevel=5)


def tier_reason(system: str, name: str, op: HostOp, attempt: NativeAttempt | None, native: bool | None
                ) -> str:
    """Why ``wrap(f)`` chose ``op``'s tier, for ``wrapped.explain`` (``attempt``: the failed
    native attempt, if one was made; ``native``: the ``wrap`` argument)."""
    if op.native:
        return (f"{name} and its rrule run on {system} arrays (tried on abstract values first), so they "
                f"run as {system}'s own operations: no host round trip, any device, and {system} "
                "differentiates the pullback for higher derivatives")
    if native is False:
        return "native=False was given: NumPy on the host"
    assert attempt is not None
    return attempt.reason(system, name)


def explanation(system: str, name: str, op: HostOp) -> str:
    """The text ``wrapped.explain(*args)`` returns for the op of those arguments.

    Example:
        >>> import numpy as np
        >>> op = HostOp("f", np.sin, None, None, None, (((2,), np.float64),), (((2,), np.float64),))
        >>> op.reason = "why"
        >>> explanation("torch", "f", op)
        'rulescore.interop.torch.wrap(f) at float64[2]: the host tier: why'
    """
    at = _show_specs(op.in_specs)
    return f"rulescore.interop.{system}.wrap({name}) at {at}: the {op.tier} tier: {op.reason}"


# -- structures --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Structure:
    """How a (nested) tuple / list / dict of leaves was built; ``None`` kind means one leaf."""

    kind: type | None
    keys: tuple[Any, ...] = ()
    children: tuple[Structure, ...] = ()

    @property
    def n_leaves(self) -> int:
        return 1 if self.kind is None else sum(c.n_leaves for c in self.children)

    def rebuild(self, leaves: Sequence[Any]) -> Any:
        """The container with ``leaves`` put back in order."""
        it = iter(leaves)
        out = self._build(it)
        return out

    def _build(self, it: Any) -> Any:
        if self.kind is None:
            return next(it)
        items = [c._build(it) for c in self.children]
        if self.kind is dict:
            return dict(zip(self.keys, items, strict=True))
        if dataclasses.is_dataclass(self.kind):
            return self.kind(**dict(zip(self.keys, items, strict=True)))
        if hasattr(self.kind, "_fields"):
            return self.kind(*items)
        return self.kind(items)


def flatten(x: Any) -> tuple[list[Any], Structure]:
    """Leaves of ``x`` (tuples, lists, dicts and dataclass instances are containers; anything
    else is a leaf). A dataclass is rebuilt from its ``__init__`` fields, so it must have no
    other fields.

    Example:
        >>> leaves, s = flatten((1.0, {"a": 2.0}))
        >>> leaves, s.rebuild([3.0, 4.0])
        ([1.0, 2.0], (3.0, {'a': 4.0}))
    """
    leaves: list[Any] = []
    return leaves, _flatten_into(x, leaves)


#: the structure of a single leaf (``flatten`` of anything but a container gives this one object)
LEAF = Structure(None)


def _flatten_into(x: Any, leaves: list[Any]) -> Structure:
    if isinstance(x, dict):
        keys = tuple(x)
        return Structure(dict, keys, tuple(_flatten_into(x[k], leaves) for k in keys))
    if isinstance(x, (tuple, list)):
        return Structure(type(x), (), tuple(_flatten_into(v, leaves) for v in x))
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        fields = dataclasses.fields(x)
        if any(not f.init for f in fields):
            raise TypeError(f"rulescore.interop: cannot flatten the {type(x).__name__} argument: its field "
                            f"{next(f.name for f in fields if not f.init)!r} is not an __init__ field, so "
                            "the dataclass cannot be rebuilt from its leaves (its gradient would be lost)")
        keys = tuple(f.name for f in fields)
        return Structure(type(x), keys, tuple(_flatten_into(getattr(x, k), leaves) for k in keys))
    leaves.append(x)
    return LEAF


def is_dynamic(x: Any) -> bool:
    """Leaves that cross into another AD system as arrays: arrays and Python floats/complexes.

    Python ints, bools, strings and other objects stay static (closed over, no tangent).
    """
    if isinstance(x, type):  # a dtype given as a class (np.float32): static
        return False
    return isinstance(x, (float, complex, np.ndarray, np.generic)) or hasattr(x, "__array_namespace__") \
        or type(x).__module__.split(".")[0] in ("jax", "jaxlib", "torch")


def leaf_tangents(t: Any, s: Structure) -> list[Any]:
    """The tangent ``t`` of a primal with structure ``s``, leaf by leaf (``None`` for zeros).

    Example:
        >>> import rulescore as rc
        >>> _, s = flatten((1.0, {"a": 2.0}))
        >>> leaf_tangents(rc.Tangent[tuple](rc.ZeroTangent(), {"a": 5.0}), s)
        [None, 5.0]
    """
    t = unthunk(t)
    if is_zero(t):
        return [None] * s.n_leaves
    if s.kind is None:
        return [t]
    out: list[Any] = []
    for i, child in enumerate(s.children):
        key = s.keys[i] if s.keys else i
        part = t.get(key) if isinstance(t, dict) else t[key]
        out.extend(leaf_tangents(part, child))
    return out


# -- engines -------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def engine() -> Any:
    """The installed AD engine (``rulescore.engines`` entry point) that differentiates pullbacks.

    It needs ``pullback(f, *args) -> (y, back)`` with ``back(ybar)`` giving one gradient per
    argument (``None`` for none), as ``zygotepy.pullback``. When several are installed, the
    environment variable ``RULESCORE_ENGINE`` names the one to use (none is picked silently).
    """
    installed = {ep.name: ep for ep in importlib.metadata.entry_points(group="rulescore.engines")}
    chosen = os.environ.get("RULESCORE_ENGINE")
    if chosen is not None or len(installed) > 1:
        if chosen not in installed:
            raise EngineMissingError(
                f"several AD engines are installed ({', '.join(sorted(installed))}) and none is chosen: "
                "set the environment variable RULESCORE_ENGINE to one of them" if chosen is None else
                f"RULESCORE_ENGINE={chosen!r} is not an installed AD engine ({', '.join(sorted(installed))})")
        return installed[chosen].load()
    for ep in installed.values():
        return ep.load()
    raise EngineMissingError(
        "higher derivatives of a host (NumPy) rule differentiate its pullback with an AD engine, and "
        "none is installed: `pip install zygotepy` (or any package with a 'rulescore.engines' entry "
        "point), or write the function and its rule with rc.array_namespace so they run natively")


# -- the op ------------------------------------------------------------------------------------------


class HostOp:
    """A NumPy function of flat leaves ``fun(*xs) -> tuple of outputs`` with ``jvp`` and ``vjp``.

    ``diff_in`` / ``diff_out`` mark the leaves that have tangents (inexact dtypes); ``jvp`` takes
    and returns tangents of those only, ``vjp`` takes cotangents of the differentiable outputs
    and returns cotangents of the differentiable inputs. Cotangents are in rulescore's convention
    (exporters conjugate complex ones for JAX and autograd).
    """

    def __init__(self, name: str, fun: Callable[..., tuple[Any, ...]], vjp: Callable[..., list[Any]],
                 jvp: Callable[..., list[Any]], engine_fun: Callable[..., tuple[Any, ...]],
                 in_specs: tuple[Spec, ...], out_specs: tuple[Spec, ...], order: int = 0,
                 out_structure: Structure | None = None, native: bool = False,
                 primal_and_pullback: PrimalAndPullback | None = None) -> None:
        self.name = name
        self.fun = fun
        self.vjp = vjp
        self.jvp = jvp
        self.engine_fun = engine_fun
        self.in_specs = in_specs  # (shape, dtype) per input
        self.out_specs = out_specs  # (shape, dtype) per output
        self.diff_in = tuple(np.issubdtype(np.dtype(d), np.inexact) for _, d in in_specs)
        self.diff_out = tuple(np.issubdtype(np.dtype(d), np.inexact) for _, d in out_specs)
        #: every input and output has a tangent: an exporter's first-order fast path applies
        self.every_leaf_differentiable = all(self.diff_in) and all(self.diff_out)
        self.order = order
        self.native = native  # fun/jvp/vjp run on the exporting system's arrays (no host callback)
        self.reason = ""  # why the exporter chose this tier (see tier_reason)
        #: ``xs -> (output leaves, pullback)`` from one rrule call, ``pullback(cts)`` as :attr:`vjp`'s
        #: result: for a system that keeps the pullback from the forward pass (``None`` when absent)
        self.primal_and_pullback = primal_and_pullback
        self.out_structure = out_structure or Structure(tuple, (), (Structure(None),) * len(out_specs))
        self._vjp_op: HostOp | None = None
        self._jvp_op: HostOp | None = None
        self.cache: dict[Any, Any] = {}  # for exporters: objects made once per op

    def __repr__(self) -> str:
        return f"HostOp({self.name}, order={self.order})"

    @property
    def tier(self) -> str:
        """``"native"`` when the op runs on the system's own arrays, else ``"host"`` (NumPy)."""
        return "native" if self.native else "host"

    @property
    def vjp_op(self) -> HostOp:
        """The pullback ``(xs, output cotangents) -> input cotangents`` as an op of its own."""
        if self._vjp_op is None:
            self._vjp_op = _derived(self)
        return self._vjp_op

    def vjp_op_for(self, needed: tuple[bool, ...]) -> HostOp:
        """:attr:`vjp_op` for a system that uses only the ``needed`` cotangents (one flag per
        differentiable input): a derivative declared not implemented is zeros where not needed."""
        if all(needed):
            return self.vjp_op
        found = self.cache.get(("vjp", needed))
        if found is None:
            found = self.cache[("vjp", needed)] = _derived(self, needed)
        return found

    @property
    def jvp_op(self) -> HostOp:
        """The tangent map ``(xs, input tangents) -> output tangents`` as an op of its own, for
        systems that run forward mode through an op (PyTorch's ``torch.func``); differentiating it
        again (forward over forward, reverse over forward) is not supported."""
        if self._jvp_op is None:
            self._jvp_op = _tangent_map(self)
        return self._jvp_op


def _zeros_for(cts: Sequence[Any], xs: Sequence[Any], mask: Sequence[bool]) -> list[Any]:
    """Cotangents of the differentiable ``xs`` as arrays of their dtype (``None`` as zeros), in
    the leaves' own array namespace (NumPy on the host, JAX or PyTorch in the native tier)."""
    if all(ct is not None and getattr(ct, "dtype", None) == getattr(x, "dtype", 0) and hasattr(ct, "shape")
           for ct, x, d in zip(cts, xs, mask, strict=True) if d):  # arrays already (the common case)
        return [ct for ct, d in zip(cts, mask, strict=True) if d]
    xp = array_namespace(*xs)
    return [xp.zeros_like(x) if ct is None else ct if isinstance(ct, NotImplementedTangent)
            else _as_dtype(ct, x, xp) for ct, x, d in zip(cts, xs, mask, strict=True) if d]


def needed_cotangents(xbars: Sequence[Any], xs: Sequence[Any], needed: Sequence[bool] | None = None
                      ) -> list[Any]:
    """The cotangents of the differentiable inputs ``xs`` a system asks for: a derivative the
    rule declares not implemented (``rc.not_implemented``) raises where ``needed`` (default:
    everywhere) and is zeros where the system discards it (an input not differentiated).

    Example:
        >>> import numpy as np, rulescore as rc
        >>> needed_cotangents([np.ones(2), rc.not_implemented("d/dnu")], [np.ones(2), np.ones(1)],
        ...                   needed=[True, False])
        [array([1., 1.]), array([0.])]
    """
    out = []
    for k, (v, x) in enumerate(zip(xbars, xs, strict=True)):
        if isinstance(v, NotImplementedTangent):
            if needed is None or needed[k]:
                v.refuse()
            v = array_namespace(x).zeros_like(x)
        out.append(v)
    return out


def _as_dtype(v: Any, like: Any, xp: Any) -> Any:
    if not (hasattr(v, "shape") and hasattr(v, "dtype")):
        return xp.asarray(v, dtype=like.dtype)
    if v.dtype == like.dtype:
        return v
    return xp.astype(v, like.dtype) if hasattr(xp, "astype") else np.asarray(v).astype(like.dtype)


def _as_array(v: Any, xp: Any) -> Any:
    return v if hasattr(v, "shape") and hasattr(v, "dtype") else xp.asarray(v)


def _spread(values: Sequence[Any], mask: Sequence[bool]) -> list[Any]:
    """Values for the ``True`` positions of ``mask``, ``None`` elsewhere."""
    it = iter(values)
    return [next(it) if d else None for d in mask]


def _fill(grads: Any, xs: Sequence[Any], mask: Sequence[bool]) -> tuple[Any, ...]:
    """An engine's gradients (``None`` for none) as arrays for the differentiable ``xs``."""
    grads = (None,) * len(xs) if grads is None else grads
    return tuple(np.zeros_like(x) if g is None else g
                 for g, x, d in zip(grads, xs, mask, strict=True) if d)


def merge_leaves(dyn: Sequence[Any], static: Sequence[Any], mask: Sequence[bool]) -> list[Any]:
    """All leaves in order: ``dyn`` where ``mask`` is true, ``static`` elsewhere."""
    d, s = iter(dyn), iter(static)
    return [next(d) if m else next(s) for m in mask]


def remember(cache: dict[Any, HostOp], key: Any, op: HostOp, limit: int = 64) -> None:
    """Keep ``op`` for ``key`` in an exporter's per-function cache, dropping the oldest beyond ``limit``."""
    if len(cache) >= limit:
        cache.pop(next(iter(cache)))
    cache[key] = op


class OpCache:
    """An exporter's ops of one wrapped function, by key, forgotten when a rule is registered
    (the registry's version counters move): a rule registered or replaced after ``wrap`` takes
    effect at the next call, its tier found again.

    Example:
        >>> import rulescore as rc
        >>> cache = OpCache()
        >>> op = HostOp("f", abs, None, None, None, (), ())
        >>> cache.put("key", op)
        >>> cache.get("key") is op
        True
        >>> rc.non_differentiable(lambda x: x)  # any registration
        >>> cache.get("key") is None
        True
    """

    def __init__(self, limit: int = 64) -> None:
        self.ops: dict[Any, HostOp] = {}
        self.limit = limit
        self.versions = (rrule.version, frule.version)

    def get(self, key: Any) -> HostOp | None:
        """The op kept for ``key`` under the rules in force now, or ``None``."""
        if self.versions != (rrule.version, frule.version):
            self.ops.clear()
            self.versions = (rrule.version, frule.version)
        return self.ops.get(key)

    def put(self, key: Any, op: HostOp) -> None:
        """Keep ``op`` for ``key``, dropping the oldest beyond the limit."""
        remember(self.ops, key, op, self.limit)


def op_name(f: Any) -> str:
    """The name errors use for the user's function."""
    return str(getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f))


#: a Python number (or what stands for one: a weakly typed 0-d JAX array) reaches a host
#: function as a Python scalar, weakly typed in NumPy's promotion as in JAX's
WEAK = "weak"


#: a 0-d leaf reaches the host function as a NumPy scalar (``np.generic``'s methods take no array)
SCALAR = "scalar"


def as_host_leaf(x: Any, kind: str | None) -> Any:
    """The NumPy leaf ``x`` as the host function sees it (see :data:`WEAK`, :data:`SCALAR`).

    Example:
        >>> import numpy as np
        >>> type(as_host_leaf(np.array(0.5), WEAK)), type(as_host_leaf(np.array(0.5), SCALAR))
        (<class 'float'>, <class 'numpy.float64'>)
    """
    if kind == WEAK:
        return np.asarray(x).item()
    return np.asarray(x)[()] if kind == SCALAR else x


def scalar_kind(f: Any) -> str | None:
    """How 0-d leaves reach ``f`` when ``f`` takes numbers only: Python numbers for the builtins
    and the methods of ``int``/``float``/``complex`` (``complex(re, im)``, ``float.conjugate``),
    NumPy scalars for ``np.generic``'s methods; ``None`` for everything else (0-d arrays).

    Example:
        >>> import numpy as np
        >>> [scalar_kind(f) for f in (complex, float.conjugate, np.generic.item, np.sin)]
        ['weak', 'weak', 'scalar', None]
    """
    owner = getattr(f, "__objclass__", None)
    if isinstance(owner, type) and issubclass(owner, np.generic):
        return SCALAR
    if owner in (int, float, complex) or (isinstance(f, type) and f in (int, float, complex)):
        return WEAK
    return None


def value_key(concrete: Sequence[Any] | None) -> tuple[Any, ...] | None:
    """The part of the leaves' values an output shape or dtype may depend on, for an exporter's
    cache key: the values of integer and boolean arrays (indices, masks) and of 0-d leaves
    (``np.arange``'s bounds); float arrays count by shape only (a spec found for them is checked
    at every call, :func:`check_outputs`)."""
    if concrete is None:
        return None
    return tuple((v.dtype.str, v.tobytes()) if v.ndim == 0 or not np.issubdtype(v.dtype, np.inexact) else None
                 for v in map(np.asarray, concrete))


def check_outputs(name: str, specs: Sequence[Spec], outs: Sequence[Any]) -> None:
    """Raise when a host call's outputs differ from the specs the system was promised (rather
    than reshape or cast them into a wrong number)."""
    got = tuple((tuple(np.shape(o)), np.dtype(getattr(o, "dtype", None) or np.result_type(o))) for o in outs)
    want = tuple((tuple(sh), np.dtype(dt)) for sh, dt in specs)
    if got != want:
        raise ValueError(
            f"rulescore.interop: {name} returned outputs of (shape, dtype) {_show_specs(got)} where "
            f"{_show_specs(want)} were found for it before the call (at other values of the same input "
            "shapes): its output shape or dtype depends on its arguments' values. Call it outside "
            "jax.jit (the spec then comes from the actual inputs), or give the spec: "
            f"wrap({name}, out_shape=...)")


def _show_specs(specs: Sequence[Spec]) -> str:
    return ", ".join(f"{np.dtype(dt).name}{list(sh)}" for sh, dt in specs)


def rule_op(f: Any, args_structure: Structure, static: tuple[Any, ...], dynamic_mask: tuple[bool, ...],
            kwargs: dict[str, Any], xs_example: Sequence[Any],
            out: tuple[Structure, tuple[Spec, ...]] | None = None, native: bool = False,
            concrete: Sequence[Any] | None = None, primal_from_rule: bool = False,
            kinds: Sequence[str | None] | None = None,
            remembered: tuple[Structure, tuple[Spec, ...]] | None = None,
            transposed_pullback: Callable[[HostOp, Sequence[Any], Sequence[Any]], list[Any]] | None = None,
            ) -> HostOp:
    """The op of ``f`` called on ``args_structure`` (leaves: ``dynamic_mask`` true ones are the
    op's inputs, the others are ``static``), derivatives from ``f``'s rrule and frule.
    ``primal_from_rule``: the op computes ``f`` as its rrule does (a NumPy function whose rule
    has a native tier, see :func:`rule_primal`). ``concrete``: the inputs' values when the
    system knows them (the output specs come from them); ``kinds``: per input, how a 0-d one
    reaches ``f`` on the host (:data:`WEAK` or ``None``); ``remembered``: the
    specs of an earlier call on values, for when the example calls fail (under ``jax.jit``);
    ``transposed_pullback(op, xs, tangents)``: forward mode for an ``f`` with an rrule and no
    frule, from the transpose of the pullback (linear in its cotangent), when the system can
    transpose it (JAX's native tier)."""
    name = op_name(f)
    n_args = len(args_structure.children)
    arg_structures = args_structure.children
    in_specs = tuple((np.shape(x), np.result_type(x)) for x in xs_example)
    diff_in = tuple(np.issubdtype(d, np.inexact) for _, d in in_specs)
    host_kinds = tuple(kinds) if kinds is not None and not native else (None,) * len(in_specs)
    numbers_only = None if native else scalar_kind(f)
    if numbers_only is not None:
        host_kinds = tuple(numbers_only if k is None and shape == () else k
                           for k, (shape, _) in zip(host_kinds, in_specs, strict=True))

    leaves_are_args = all(dynamic_mask) and all(c.kind is None for c in arg_structures)
    leaves_as_given = all(k is None for k in host_kinds)

    def merge(xs: Sequence[Any]) -> tuple[Any, ...]:
        if leaves_are_args:  # f(x, y) on arrays: no containers to rebuild (the hot path)
            return tuple(xs)
        return tuple(args_structure.rebuild(merge_leaves(xs, static, dynamic_mask)))

    def host_merge(xs: Sequence[Any]) -> tuple[Any, ...]:
        return merge(xs if leaves_as_given else
                     [as_host_leaf(x, k) for x, k in zip(xs, host_kinds, strict=True)])

    def primal(xs: Sequence[Any]) -> Any:
        args = host_merge(xs)
        return rule_primal(f, args, kwargs) if primal_from_rule else f(*args, **kwargs)

    def fun(*xs: Any) -> tuple[Any, ...]:
        xp = array_namespace(*xs)
        return tuple(_as_array(v, xp) for v in flatten(primal(xs))[0])

    every_leaf_differentiable = leaves_are_args and all(diff_in)

    def primal_and_pullback(xs: Sequence[Any]) -> tuple[list[Any], Callable[[Sequence[Any]], list[Any]]]:
        args = host_merge(xs)
        # the registry's lookup (cached per argument classes, cleared by a registration) and the
        # author's rrule, its pullback called below as the contract calls it (pull_back) but with
        # no wrapper per call; only a call the lookup does not cover (a bound method) goes through
        # rrule(...)
        rule = rrule.lookup(f, args)
        if rule is not None:
            y, back = rrule_pair(rule, f, rrule.run(rule, None, f, args, kwargs))
        else:
            found = rrule(f, *args, **kwargs)
            if found is None:
                raise TypeError(f"no rrule for {name} at these arguments: register one with "
                                f"@rc.rrule.register({name}) (rc.scalar_rule gives both rules)")
            y, back = found
        ys, s = flatten(y)
        single = s.kind is None and op.diff_out == (True,)

        def leaf_pullback(cts: Sequence[Any]) -> list[Any]:
            ybar = cts[0] if single else s.rebuild(_spread(cts, op.diff_out))
            grads = back(ybar) if rule is None else pull_back(rule, back, n_args, ybar)
            if len(grads) != n_args + 1:
                raise ValueError(f"the rrule pullback of {name} returned {len(grads)} cotangents for "
                                 f"{n_args} arguments (the first entry is for {name} itself)")
            if every_leaf_differentiable and all(getattr(g, "dtype", None) == x.dtype and hasattr(g, "shape")
                                                 for g, x in zip(grads[1:], xs, strict=True)):
                return list(grads[1:])  # arrays of the arguments' dtypes already (the common case)
            leaves = [leaf for g, s_i in zip(grads[1:], arg_structures, strict=True)
                      for leaf in leaf_tangents(g, s_i)]
            return _zeros_for([v for v, d in zip(leaves, dynamic_mask, strict=True) if d], xs, diff_in)

        return ys, leaf_pullback

    def vjp(xs: Sequence[Any], cts: Sequence[Any]) -> list[Any]:
        return primal_and_pullback(xs)[1](cts)

    def jvp(xs: Sequence[Any], tangents: Sequence[Any]) -> list[Any]:
        args = host_merge(xs)
        dyn_t = iter(_spread(tangents, diff_in))
        leaf_t = [next(dyn_t) if d else None for d in dynamic_mask]
        arg_t = []
        i = 0
        for s_i in arg_structures:
            part = leaf_t[i:i + s_i.n_leaves]
            i += s_i.n_leaves
            arg_t.append(s_i.rebuild([NoTangent() if t is None else t for t in part]))
        found = frule((NoTangent(), *arg_t), f, *args, **kwargs)
        if found is None and transposed_pullback is not None and rrule.lookup(f, args) is not None:
            return transposed_pullback(op, xs, tangents)
        if found is None:
            raise TypeError(f"no frule for {name}: forward mode (jvp, jacfwd, hessian) needs one; register "
                            f"it with @rc.frule.register({name}) (rc.scalar_rule gives both rules)")
        y, ydot = found
        ys, s = flatten(y)
        return _zeros_for(leaf_tangents(ydot, s), ys, op.diff_out)

    def engine_fun(*xs: Any) -> tuple[Any, ...]:
        leaves, _ = flatten(f(*merge(xs), **kwargs))
        return tuple(leaves)

    if out is None:
        out = _output_of(name, primal, in_specs, concrete, remembered)
    op = HostOp(name, fun, vjp, jvp, engine_fun, in_specs, out[1], out_structure=out[0], native=native,
                primal_and_pullback=primal_and_pullback)
    return op


def reject_hidden_arrays(name: str, static: Sequence[Any], is_traced: Callable[[Any], bool]) -> None:
    """Raise when a leaf the exporter passes as a constant (an object it does not flatten) holds
    an array the system is differentiating: its gradient would be lost, silently."""
    for leaf in static:
        if isinstance(leaf, (numbers.Number, str, bytes, type, np.ndarray, np.generic)) or leaf is None:
            continue
        if any(is_traced(v) for v in _attribute_values(leaf)):
            raise TypeError(
                f"rulescore.interop: an argument of {name} is a {type(leaf).__name__} holding an array "
                "the system differentiates, and the exporters pass such objects as constants (they flatten "
                "tuples, lists, dicts and dataclasses, nothing else): its gradient would be lost. Pass its "
                "arrays in one of those containers")


def _attribute_values(x: Any, depth: int = 3) -> list[Any]:
    """The values in ``x``'s attributes, and in containers there (a few levels deep)."""
    if depth == 0:
        return []
    if isinstance(x, dict):
        items = list(x.values())
    elif isinstance(x, (tuple, list)):
        items = list(x)
    else:
        items = list(getattr(x, "__dict__", {}).values())
    return items + [v for item in items for v in _attribute_values(item, depth - 1)]


def rule_primal(f: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
    """``f(*args, **kwargs)`` as ``f``'s rrule computes it: for a NumPy function whose rule has a
    native tier (``np.sin`` on JAX tracers or tensors runs ``xp.sin``), where ``f`` itself
    would convert its arguments to NumPy arrays.

    Example:
        >>> import numpy as np
        >>> float(rule_primal(np.sin, (0.0,), {}))
        0.0
    """
    found = rrule(f, *args, **kwargs)
    if found is None:
        raise TypeError(f"no rrule for {op_name(f)} at these arguments: register one with "
                        f"@rc.rrule.register({op_name(f)})")
    return found[0]


def _output_of(name: str, call: Callable[[Sequence[Any]], Any], in_specs: tuple[Spec, ...],
               concrete: Sequence[Any] | None, remembered: tuple[Structure, tuple[Spec, ...]] | None = None,
               ) -> tuple[Structure, tuple[Spec, ...]]:
    """The output's structure and specs: from the actual inputs when the system knows them
    (``concrete``, any call outside ``jax.jit``), else from calls on arrays of ones and on random
    values of the input shapes (under ``jit``), which must agree: a spec that depends on the
    values is an error there, not a guess. When both example calls fail (outside the
    function's domain), the ``remembered`` specs of an earlier call on values serve."""
    if concrete is not None:
        with np.errstate(all="ignore"):
            leaves, structure = flatten(call(list(concrete)))
        return structure, tuple((np.shape(v), np.result_type(v)) for v in leaves)
    found: list[tuple[str, Structure, tuple[Spec, ...]]] = []
    errors = []
    examples = (("ones", [np.ones(sh, dt) for sh, dt in in_specs]), ("random values", _random(in_specs)))
    for label, xs in examples:
        try:
            with np.errstate(all="ignore"):
                leaves, structure = flatten(call(xs))
        except Exception as err:  # outside the function's domain: the other example may work
            errors.append(f"{type(err).__name__}: {err}")
            continue
        found.append((label, structure, tuple((np.shape(v), np.result_type(v)) for v in leaves)))
    if not found and remembered is not None:
        return remembered
    if not found:
        raise TypeError(f"cannot find the output shapes of {name} from its input shapes without its input "
                        f"values (under jax.jit or torch.func.vmap): calling it on example values failed "
                        f"({errors[-1]}); give them: wrap({name}, out_shape=...), or call it once outside "
                        "jit with inputs of these shapes")
    if len(found) == 2 and found[0][1:] != found[1][1:]:
        raise TypeError(f"the output of {name} depends on its inputs' values, not only their shapes "
                        f"({_show_specs(found[0][2])} at {found[0][0]}, {_show_specs(found[1][2])} at "
                        f"{found[1][0]}): under jax.jit the values are not known before the call. Call it "
                        f"outside jit (eager JAX uses the actual values), or give the spec: "
                        f"wrap({name}, out_shape=...)")
    return found[0][1], found[0][2]


def _random(in_specs: tuple[Spec, ...]) -> list[Any]:
    """Random example values: normal floats, 0/1 integers, mixed booleans."""
    rng = np.random.default_rng(0)
    out = []
    for sh, dt in in_specs:
        dt = np.dtype(dt)
        if dt == np.bool_:
            out.append(rng.random(sh) < 0.5)
        elif np.issubdtype(dt, np.integer):
            out.append(rng.integers(0, 2, sh).astype(dt))
        else:
            out.append(np.asarray(rng.standard_normal(sh)).astype(dt))
    return out


def _derived(g: HostOp, needed: tuple[bool, ...] | None = None) -> HostOp:
    """``g``'s pullback as an op: inputs ``(xs, cts)``, outputs the differentiable xs' cotangents.

    Its vjp differentiates the pullback with the installed engine; its jvp uses that the
    pullback is linear in ``cts`` and that ``d/dxs <cts, g(xs)>`` has a symmetric Jacobian in
    ``xs`` (a Hessian), so both parts are pullbacks too (real inputs). ``needed``: which of the
    differentiable xs' cotangents the system uses (see :func:`needed_cotangents`).
    """
    n = len(g.diff_in)
    in_specs = g.in_specs + tuple(s for s, d in zip(g.out_specs, g.diff_out, strict=True) if d)
    diff_in = g.diff_in + (True,) * sum(g.diff_out)
    out_specs = tuple(s for s, d in zip(g.in_specs, g.diff_in, strict=True) if d)

    diff_xs = [k for k, d in enumerate(g.diff_in) if d]

    def fun(*a: Any) -> tuple[Any, ...]:
        return tuple(needed_cotangents(g.vjp(a[:n], a[n:]), [a[k] for k in diff_xs], needed))

    def engine_fun(*a: Any) -> tuple[Any, ...]:
        xs, cts = a[:n], a[n:]
        _, back = engine().pullback(g.engine_fun, *xs)
        ybar = tuple(_spread(cts, g.diff_out))
        ybar = tuple(np.zeros(sh, dt) if c is None else c
                     for c, (sh, dt) in zip(ybar, g.out_specs, strict=True))
        return _fill(back(ybar), xs, g.diff_in)

    def vjp(a: Sequence[Any], cts: Sequence[Any]) -> list[Any]:
        _, back = engine().pullback(engine_fun, *a)
        return list(_fill(back(tuple(cts)), a, diff_in))

    def jvp(a: Sequence[Any], tangents: Sequence[Any]) -> list[Any]:
        xs = a[:n]
        x_t = _spread(tangents[: sum(g.diff_in)], g.diff_in)
        ct_t = list(tangents[sum(g.diff_in):])
        linear = g.vjp(xs, ct_t)
        hessian_part = vjp(a, [np.zeros_like(t) if t is None else t
                               for t, d in zip(x_t, g.diff_in, strict=True) if d])[: sum(g.diff_in)]
        return [p + h for p, h in zip(linear, hessian_part, strict=True)]

    # a native rule's pullback runs natively too; the pullback of that (through the engine) on the host
    return HostOp(f"pullback of {g.name}", fun, vjp, jvp, engine_fun, in_specs, out_specs, g.order + 1,
                  native=g.native and g.order == 0)


def _tangent_map(g: HostOp) -> HostOp:
    n = len(g.diff_in)
    in_specs = g.in_specs + tuple(s for s, d in zip(g.in_specs, g.diff_in, strict=True) if d)
    out_specs = tuple(s for s, d in zip(g.out_specs, g.diff_out, strict=True) if d)

    def fun(*a: Any) -> tuple[Any, ...]:
        return tuple(g.jvp(a[:n], a[n:]))

    def unsupported(*_: Any) -> Any:
        raise NotImplementedError(
            f"rulescore: differentiating the frule of the host rule {g.name} (forward over forward, or "
            "reverse over forward) is not supported; use reverse mode inside (jacfwd(jacrev), hessian, "
            "grad of grad), "
            "or write the function and its rules with rc.array_namespace (the native tier)")

    # a native op's tangent map runs natively too: its frule then sees the primal the op computed
    # (a host round trip would recompute eigenvectors or singular vectors in another gauge)
    return HostOp(f"tangent map of {g.name}", fun, unsupported, unsupported, unsupported, in_specs, out_specs,
                  g.order + 1, native=g.native)
