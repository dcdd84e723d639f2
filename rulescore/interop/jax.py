"""f's registered rules as JAX derivatives: ``wrap(f)`` is a JAX function (needs the ``jax`` extra).

Two primitives carry any :class:`~rulescore.interop._host.HostOp`: ``rulescore_call`` computes
``f`` and ``rulescore_jvp`` (linear in its tangents) computes the frule's ``ydot``. JAX's
forward mode uses the frule; reverse mode transposes ``rulescore_jvp`` into the rrule's
pullback, itself a ``rulescore_call`` of the pullback op, so ``grad`` of ``grad``,
``jacrev(jacrev)`` and ``hessian`` work too. A NumPy function runs on the host through
``jax.pure_callback``; a function written with ``rc.array_namespace`` (the native tier) is
traced into JAX operations instead: no callback, so it composes with sharding and accelerators.

JAX's complex cotangents are the conjugate of rulescore's: converted at the boundary.

Example:
    >>> import numpy as np, jax, rulescore as rc, rulescore.interop.jax as rjax
    >>> def cube(x):
    ...     return x ** 3
    >>> rc.scalar_rule(cube, lambda x: 3 * x ** 2)
    >>> g = rjax.wrap(cube)
    >>> jax.grad(lambda x: g(x).sum())(jax.numpy.array([2.0])).tolist()
    [12.0]
    >>> float(jax.grad(jax.grad(lambda x: g(x)))(2.0))   # the pullback differentiated
    12.0
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from rulescore.interop._host import (
    LEAF,
    WEAK,
    HostOp,
    NativeAttempt,
    OpCache,
    Spec,
    Structure,
    check_outputs,
    explanation,
    flatten,
    is_dynamic,
    merge_leaves,
    needed_cotangents,
    op_name,
    reject_hidden_arrays,
    remember,
    rule_op,
    rule_primal,
    tier_reason,
    value_key,
)

__all__ = ["wrap"]

call_p = Primitive("rulescore_call")
call_p.multiple_results = True
jvp_p = Primitive("rulescore_jvp")
jvp_p.multiple_results = True


def _canonical(specs: tuple[Spec, ...]) -> tuple[Spec, ...]:
    """Specs in JAX's dtypes (float64 is float32 unless ``jax_enable_x64``)."""
    return tuple((tuple(sh), np.dtype(jax.dtypes.canonicalize_dtype(dt))) for sh, dt in specs)


def _avals(specs: tuple[Spec, ...]) -> list[Any]:
    return [jax.core.ShapedArray(shape, dtype) for shape, dtype in _canonical(specs)]


def _diff_specs(op: HostOp, specs: tuple[Spec, ...], mask: tuple[bool, ...]) -> tuple[Spec, ...]:
    return tuple(s for s, d in zip(specs, mask, strict=True) if d)


def _conj(x: Any) -> Any:
    return np.conj(x) if np.iscomplexobj(x) else x


# -- host evaluation ---------------------------------------------------------------------------------


class _Host:
    """A host computation with fixed output specs; one instance per op and kind, so that
    ``pure_callback`` (which keys its compilation cache on the callback) compiles it once."""

    def __init__(self, name: str, fn: Callable[..., Any], specs: tuple[Spec, ...]) -> None:
        self.name, self.fn, self.specs = name, fn, specs

    def __call__(self, *xs: Any) -> tuple[Any, ...]:
        outs = [np.asarray(o) for o in self.fn(*(np.asarray(x) for x in xs))]
        outs = [o.astype(jax.dtypes.canonicalize_dtype(o.dtype), copy=False) for o in outs]
        check_outputs(self.name, self.specs, outs)
        return tuple(outs)


def _host(op: HostOp, kind: str) -> _Host:
    found = op.cache.get(kind)
    if found is None:
        fn = op.fun if kind == "call" else _jvp_fn(op)
        specs = op.out_specs if kind == "call" else _diff_specs(op, op.out_specs, op.diff_out)
        found = op.cache[kind] = _Host(op.name, fn, _canonical(specs))
    return found


@jax.jit
def _to_jax(*values: Any) -> tuple[Any, ...]:
    """NumPy values as JAX arrays in one dispatch through jit's C++ path: about a third of what
    ``jnp.asarray`` costs per value eagerly (a ``stage`` primitive each). The body's
    ``jnp.asarray`` is the identity on jit's tracers and keeps outputs arrays under
    ``jax.disable_jit``."""
    return tuple(jnp.asarray(v) for v in values)


def _run_host(host: _Host, *args: Any) -> list[Any]:
    if not any(isinstance(a, jax.core.Tracer) for a in args):  # eager: call NumPy directly
        return list(_to_jax(*host(*args)))
    out = jax.pure_callback(host, tuple(jax.ShapeDtypeStruct(sh, dt) for sh, dt in host.specs), *args,
                            vmap_method="sequential")
    return list(out)


def _call_fn(op: HostOp) -> Callable[..., tuple[Any, ...]]:
    return op.fun


def _jvp_fn(op: HostOp) -> Callable[..., list[Any]]:
    n = len(op.in_specs)
    return lambda *a: op.jvp(a[:n], a[n:])


def _on_cpu(args: Any) -> bool:
    """Concrete (eager) arrays, all on the CPU: a native op computes them with NumPy, which needs
    no XLA compilation per shape (under ``jit``, or on an accelerator, it runs as JAX operations)."""
    return all(isinstance(a, np.ndarray) or (not isinstance(a, jax.core.Tracer) and isinstance(a, jax.Array)
                                             and _cpu_only(a.sharding)) for a in args)


@functools.lru_cache(maxsize=64)
def _cpu_only(sharding: Any) -> bool:
    """Whether every device of ``sharding`` is a CPU (asked per eager call: found once per sharding)."""
    return all(d.platform == "cpu" for d in sharding.device_set)


def _native(fn: Callable[..., Any], args: Any) -> list[Any]:
    if _on_cpu(args):
        return list(_to_jax(*(np.asarray(v) for v in fn(*(np.asarray(a) for a in args)))))
    return list(fn(*args))


def _call_impl(*args: Any, op: HostOp) -> list[Any]:
    if op.native:
        return _native(op.fun, args)
    return _run_host(_host(op, "call"), *args)


def _jvp_impl(*args: Any, op: HostOp) -> list[Any]:
    if op.native:
        return _native(_jvp_fn(op), args)
    return _run_host(_host(op, "jvp"), *args)


call_p.def_impl(_call_impl)
jvp_p.def_impl(_jvp_impl)
def _out_avals(op: HostOp) -> list[Any]:
    """The avals of ``op``'s outputs (found once per op: JAX asks at every bind)."""
    found = op.cache.get("jax out avals")
    if found is None:
        found = op.cache["jax out avals"] = _avals(op.out_specs)
    return found


def _tangent_specs(op: HostOp) -> tuple[Spec, ...]:
    """The canonical specs of ``op``'s differentiable outputs: its tangents' and cotangents'."""
    found = op.cache.get("jax tangent specs")
    if found is None:
        found = op.cache["jax tangent specs"] = _canonical(_diff_specs(op, op.out_specs, op.diff_out))
    return found


call_p.def_abstract_eval(lambda *args, op: _out_avals(op))
jvp_p.def_abstract_eval(lambda *args, op: _avals(_tangent_specs(op)))
mlir.register_lowering(call_p, mlir.lower_fun(_call_impl, multiple_results=True))
mlir.register_lowering(jvp_p, mlir.lower_fun(_jvp_impl, multiple_results=True))


# -- differentiation -----------------------------------------------------------------------------------


def _jax_array(x: Any) -> Any:
    """``x`` as a strongly typed JAX value: a JAX array or tracer as it is (``jnp.asarray`` of a
    tracer under ``grad`` is an operation of its own, dispatched eagerly); a weakly typed one (from
    a Python number) through ``jnp.asarray``, which makes it strong (the primitives' cotangents
    for a weakly typed input would be dropped: a zero gradient)."""
    if isinstance(x, (jax.Array, jax.core.Tracer)) and not getattr(jax.typeof(x), "weak_type", True):
        return x
    return jnp.asarray(x)


def _conj_if_complex(x: Any) -> Any:
    return jnp.conj(x) if jnp.iscomplexobj(x) else x


def _instantiate(t: Any, x: Any) -> Any:
    return jnp.zeros(jnp.shape(x), jnp.result_type(x)) if type(t) is ad.Zero else t


def _zero(x: Any) -> Any:
    """JAX's symbolic zero tangent for the primal value ``x``."""
    return ad.Zero(jax.typeof(x).to_tangent_aval())  # Zero.from_primal_value is gone in JAX 0.10


def _forward_keeping_pullback(op: HostOp, primals: Any) -> list[Any]:
    """``op``'s outputs at concrete CPU ``primals`` from one call of its rrule (in NumPy, as
    :func:`_native` computes eagerly), whose pullback is kept for the transpose that follows
    (:func:`_kept_pullback`): a gradient then runs the rrule once, not once more to transpose."""
    assert op.primal_and_pullback is not None
    leaves, pullback = op.primal_and_pullback([np.asarray(a) for a in primals])
    outs = list(_to_jax(*(np.asarray(v) for v in leaves)))
    want = _out_avals(op)
    if len(outs) != len(want) or any(o.shape != a.shape or o.dtype != a.dtype
                                     for o, a in zip(outs, want, strict=True)):
        got = [f"{o.dtype}{list(o.shape)}" for o in outs]
        raise ValueError(f"rulescore.interop.jax: the rrule of {op.name} returns outputs {got} where "
                         f"{op.name} itself returns {[a.str_short() for a in want]}: the rrule's primal must "
                         f"be {op.name}'s (rulescore.testing.test_rrule checks it)")
    op.cache["kept pullback"] = (tuple(primals), pullback)  # the latest only: its residuals are held
    return outs


def _kept_pullback(op: HostOp, primals: Any, cts: Any) -> Callable[..., Any] | None:
    """The pullback :func:`_forward_keeping_pullback` kept for exactly these ``primals`` (the same
    arrays, which JAX hands the transpose as the linearization's residuals), when the cotangents
    are concrete CPU arrays too (not under ``vmap``, as ``jacrev`` gives them); else ``None``."""
    kept = op.cache.get("kept pullback")
    if kept is None or len(kept[0]) != len(primals) or not _on_cpu(cts) or \
            any(a is not b for a, b in zip(kept[0], primals, strict=True)):
        return None
    return kept[1]  # type: ignore[no-any-return]


def _primal_outputs(op: HostOp, primals: Any) -> list[Any]:
    """``op``'s outputs at ``primals`` for a derivative: on eager CPU arrays in the native tier
    from the rrule, whose pullback is kept for the transpose; else ``call_p``."""
    if op.native and op.primal_and_pullback is not None and _on_cpu(primals):
        return _forward_keeping_pullback(op, primals)
    return call_p.bind(*primals, op=op)  # type: ignore[no-any-return]


def _tangent_outputs(op: HostOp, primals: Any, tangents: Any, outs: Any) -> list[Any]:
    """The outputs' tangents: ``jvp_p`` of the differentiable inputs' tangents, JAX's symbolic
    zeros for the outputs that have none."""
    diff = [_instantiate(t, x) for t, x, d in zip(tangents, primals, op.diff_in, strict=True) if d]
    ydots = iter(jvp_p.bind(*primals, *diff, op=op))
    return [next(ydots) if d else _zero(o) for o, d in zip(outs, op.diff_out, strict=True)]


def _call_jvp(primals: Any, tangents: Any, *, op: HostOp) -> tuple[list[Any], list[Any]]:
    if all(type(t) is ad.Zero for t, d in zip(tangents, op.diff_in, strict=True) if d):
        outs = call_p.bind(*primals, op=op)
        return outs, [_zero(o) for o in outs]
    outs = _primal_outputs(op, primals)
    return outs, _tangent_outputs(op, primals, tangents, outs)


def _call_linearize(*args: Any, op: HostOp) -> tuple[list[Any], list[bool], Any, Callable[..., list[Any]]]:
    """``call_p``'s rule for JAX's direct linearization (how ``grad``, ``vjp`` and ``linearize``
    run in JAX 0.10; behind ``jax_use_direct_linearize`` in 0.5.3): the forward outputs, which
    tangents are nonzero, the residuals (the primals) and the tangent map. Without it JAX
    linearizes through :func:`_call_jvp` by partial evaluation, which traces a jaxpr of it per
    call: a tenth of an eager gradient of ``sum(np.sin(x))``. JAX passes ``(nonzeros, *primals)``,
    and ``is_vjp`` before them in newer versions: the primals are the op's last
    ``len(op.in_specs)`` arguments (JAX calls it only when some tangent is nonzero, and an
    integer input's is always a symbolic zero)."""
    primals = args[len(args) - len(op.in_specs):]
    outs = _primal_outputs(op, primals)
    return outs, list(op.diff_out), primals, lambda res, *ts: _tangent_outputs(op, res, ts, outs)


def _jvp_transpose(cts: Any, *args: Any, op: HostOp) -> list[Any]:
    n = len(op.in_specs)
    primals = args[:n]
    if any(ad.is_undefined_primal(x) for x in primals):
        raise NotImplementedError(f"rulescore: {op.name}: the tangent map is linear in tangents only")
    cts = [_conj_if_complex(jnp.zeros(sh, dt) if type(c) is ad.Zero else c)
           for c, (sh, dt) in zip(cts, _tangent_specs(op), strict=True)]
    # native: the pullback's JAX operations, which JAX differentiates further on its own
    n_in = len(primals)
    needed = tuple(ad.is_undefined_primal(t) for t in args[n:])  # the tangents JAX transposes to
    diff_xs = [k for k, d in enumerate(op.diff_in) if d]
    kept = _kept_pullback(op, primals, cts) if op.native else None
    if kept is not None:  # eager, first order: the forward pass's pullback, in NumPy
        xbars = list(_to_jax(*(np.asarray(v) for v in needed_cotangents(
            kept([np.asarray(c) for c in cts]), [np.asarray(primals[k]) for k in diff_xs], needed))))
    elif op.native:
        xbars = _native(lambda *a: needed_cotangents(op.vjp(a[:n_in], a[n_in:]), [a[k] for k in diff_xs],
                                                     needed), (*primals, *cts))
    else:
        xbars = call_p.bind(*primals, *cts, op=op.vjp_op_for(needed))
    return [None] * n + [_conj_if_complex(v) for v in xbars]


def _jvp_jvp(primals: Any, tangents: Any, *, op: HostOp) -> Any:
    if op.native:
        tangents = [_instantiate(t, x) for t, x in zip(tangents, primals, strict=True)]
        outs, touts = jax.jvp(lambda *a: tuple(_jvp_fn(op)(*a)), tuple(primals), tuple(tangents))
        return list(outs), list(touts)
    raise NotImplementedError(
        f"rulescore: forward-over-forward (jacfwd of jacfwd, jvp of jvp) of the host rule {op.name} is not "
        "supported; use reverse mode for the outer derivative (jax.hessian, jacfwd(jacrev), grad of grad)")


ad.primitive_jvps[call_p] = _call_jvp
_linearizations = getattr(jax._src.interpreters.ad, "primitive_linearizations", None)  # no public spelling
if _linearizations is not None:
    _linearizations[call_p] = _call_linearize
ad.primitive_jvps[jvp_p] = _jvp_jvp
ad.primitive_transposes[jvp_p] = _jvp_transpose


# -- batching: native ops are vmapped; host ops make one call per batch element ------------------------


def _batch(prim: Primitive, args: Any, dims: Any, *, op: HostOp) -> tuple[Any, Any]:
    size = next(a.shape[d] for a, d in zip(args, dims, strict=True) if d is not None)
    moved = [a if d is None else jnp.moveaxis(a, d, 0) for a, d in zip(args, dims, strict=True)]
    if op.native:
        full = [jnp.broadcast_to(a, (size, *jnp.shape(a))) if d is None else a
                for a, d in zip(moved, dims, strict=True)]
        outs = prim.bind(*full, op=_vmapped(op, size))
        return outs, [0] * len(outs)
    rows = [prim.bind(*(a if d is None else a[i] for a, d in zip(moved, dims, strict=True)), op=op)
            for i in range(size)]
    outs = [jnp.stack(col) for col in zip(*rows, strict=True)]
    return outs, [0] * len(outs)


def _vmapped(op: HostOp, size: int) -> HostOp:
    """A native op on a leading batch axis of ``size`` for every input, by ``jax.vmap``."""
    n = len(op.in_specs)

    def batched(specs: tuple[Spec, ...]) -> tuple[Spec, ...]:
        return tuple(((size, *sh), dt) for sh, dt in specs)

    def fun(*xs: Any) -> tuple[Any, ...]:
        return tuple(jax.vmap(lambda *a: tuple(op.fun(*a)))(*xs))

    def jvp(xs: Any, ts: Any) -> list[Any]:
        return list(jax.vmap(lambda *a: tuple(op.jvp(a[:n], a[n:])))(*xs, *ts))

    def vjp(xs: Any, cts: Any) -> list[Any]:
        return list(jax.vmap(lambda *a: tuple(op.vjp(a[:n], a[n:])))(*xs, *cts))

    return HostOp(f"vmap of {op.name}", fun, vjp, jvp, fun, batched(op.in_specs), batched(op.out_specs),
                  op.order, native=True)


batching.primitive_batchers[call_p] = functools.partial(_batch, call_p)
batching.primitive_batchers[jvp_p] = functools.partial(_batch, jvp_p)


# -- wrap ------------------------------------------------------------------------------------------------


def _spec_of(x: Any) -> Spec:
    return (tuple(np.shape(x)), np.dtype(jnp.result_type(x)))


def _concrete(x: Any) -> np.ndarray | None:
    """``x``'s value when JAX knows it: a plain value, or a tracer outside ``jit`` (``grad``,
    ``vjp``, ``jvp`` trace concrete values); ``None`` under ``jit`` and ``vmap``."""
    if not isinstance(x, jax.core.Tracer):
        return np.asarray(x)
    value = getattr(jax._src.core, "to_concrete_value", lambda _: None)(x)  # no public spelling (JAX 0.10)
    return None if value is None else np.asarray(value)


def _kind(x: Any) -> str | None:
    """A Python number, or a weakly typed 0-d JAX value (one made from a Python number), stays a
    Python scalar for the host function: its dtype does not promote the others (JAX's rule)."""
    if isinstance(x, (float, complex)):
        return WEAK
    aval = jax.typeof(x) if isinstance(x, jax.core.Tracer) else x
    return WEAK if getattr(aval, "weak_type", False) and not np.shape(x) else None


def _plain_key(args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The shapes and dtypes of ``args`` when every one is a strongly typed JAX array (or tracer):
    a native op found for them serves every such call (it reads no values); else ``None``."""
    key = []
    for x in args:
        if not isinstance(x, jax.Array) or getattr(jax.typeof(x), "weak_type", True):
            return None
        key.append((x.shape, x.dtype))
    return tuple(key)


def _out_specs(out_shape: Any, in_specs: list[Any]) -> tuple[Structure, tuple[Spec, ...]] | None:
    if out_shape is None:
        return None
    leaves, structure = flatten(out_shape(*in_specs) if callable(out_shape) else out_shape)
    return structure, tuple((tuple(s.shape), np.dtype(s.dtype)) for s in leaves)


def _transposed_pullback(op: HostOp, xs: Any, tangents: Any) -> list[Any]:
    """The tangent map of an rrule-only native op: the pullback is linear in its cotangent, and
    its transpose (``jax.linear_transpose``) is the pushforward. In rulescore's convention the
    pullback is ``J^H``, so the pushforward is ``conj(transpose(conj(xdot)))``."""
    xs = [jnp.asarray(x) for x in xs]
    cts = [jax.ShapeDtypeStruct(sh, dt) for sh, dt in _canonical(_diff_specs(op, op.out_specs, op.diff_out))]
    transpose = jax.linear_transpose(lambda *c: tuple(op.vjp(xs, list(c))), *cts)
    ydots = transpose(tuple(jnp.conj(jnp.asarray(t)) for t in tangents))
    return [jnp.conj(y) for y in ydots]


def _native_op(f: Callable[..., Any], structure: Structure, static: tuple[Any, ...], mask: tuple[bool, ...],
               kwargs: dict[str, Any], examples: list[Any], sds: list[Any]) -> HostOp | NativeAttempt:
    """The native-tier op of ``f`` when ``f`` and its rrule run on JAX arrays (traced abstractly
    here, nothing computed), else why not."""
    def call(via_rule: bool) -> tuple[list[Any], Structure]:
        found: list[Structure] = []

        def primal(*d: Any) -> list[Any]:
            args = structure.rebuild(merge_leaves(d, static, mask))
            leaves, out_structure = flatten(rule_primal(f, args, kwargs) if via_rule else f(*args, **kwargs))
            found.append(out_structure)  # f's own key order (JAX's pytrees sort a dict's keys)
            return leaves

        return jax.eval_shape(primal, *sds), found[0]

    try:
        (leaves, out_structure), via_rule = call(False), False
    except Exception as err:  # a NumPy function (np.sin): its rule's native tier, if it has one
        try:
            (leaves, out_structure), via_rule = call(True), True
        except Exception as rule_err:  # f and its rule need NumPy arrays: the host tier
            return NativeAttempt(err, function_ran=False, rule_error=rule_err)
    try:
        specs = tuple((tuple(s.shape), np.dtype(s.dtype)) for s in leaves)
        op = rule_op(f, structure, static, mask, kwargs, examples, (out_structure, specs), native=True,
                     primal_from_rule=via_rule, transposed_pullback=_transposed_pullback)
        cts = [jax.ShapeDtypeStruct(sh, dt) for sh, dt in _diff_specs(op, specs, op.diff_out)]
        diff_xs = [k for k, d in enumerate(op.diff_in) if d]
        unneeded = [False] * len(diff_xs)  # rc.not_implemented cotangents count as zeros for the shapes

        jax.eval_shape(lambda d, c: needed_cotangents(op.vjp(d, c), [d[k] for k in diff_xs], unneeded),
                       list(sds), cts)
    except Exception as err:  # the rule needs NumPy arrays: the host tier
        return NativeAttempt(err, function_ran=not via_rule)
    return op


def wrap(f: Callable[..., Any], out_shape: Any = None, native: bool | None = None) -> Callable[..., Any]:
    """``f`` as a JAX function whose derivatives come from ``f``'s registered rules.

    Arguments may be arrays, Python floats, and tuples / lists / dicts / dataclasses of them;
    other leaves (ints, strings) are passed to ``f`` as they are and get no gradient; integer
    arrays get ``float0`` zeros, as JAX expects; Python floats reach ``f`` as Python floats
    (weakly typed). ``f`` sees NumPy arrays and runs on the host through ``jax.pure_callback``.
    Its output shapes come from one call on the actual inputs outside ``jit`` (``grad`` and
    ``vjp`` included); under ``jit`` from calls on ones and on random values of the input shapes,
    which must agree (else a ``TypeError``: the output depends on the values), or, where both
    fail, from an earlier call on values with these shapes; or the author gives them as
    ``out_shape``: a callable from the arguments as ``jax.ShapeDtypeStruct`` to the output's, or
    a fixed output spec.

    The native tier: when ``f`` and its rrule run on JAX arrays (written with
    ``rc.array_namespace``), they are traced into JAX operations instead, with no callback
    (``native=None`` finds out by tracing them abstractly; ``True`` requires it and otherwise
    raises with the reason, ``False`` never). When ``f`` runs on JAX arrays but its rule does
    not, ``wrap`` warns (:class:`~rulescore.interop._host.NativeTierWarning`) with the reason and
    uses the host tier. A native rule with an rrule and no frule gets forward mode (``jvp``,
    ``jacfwd``, ``hessian``) from the transpose of its pullback. Eagerly on CPU arrays a native
    first-order gradient runs the rrule once (the forward pass keeps its pullback, and the residuals
    it holds, until the next call); under ``jit``, ``vmap`` and higher orders the transpose runs
    the rrule again, as JAX operations. A rule registered or replaced after ``wrap`` takes effect
    at the next call. ``wrapped.tier`` is the tier of the latest call (``"native"`` or
    ``"host"``; ``None`` before the first), and ``wrapped.explain(*args)`` says which tier a
    call on ``args`` runs in and why.

    Example:
        >>> import numpy as np, jax, jax.numpy as jnp, rulescore as rc, rulescore.interop.jax as rjax
        >>> def scaled_sum(x, y):
        ...     return np.sum(x) * y
        >>> @rc.rrule.register(scaled_sum)
        ... def scaled_sum_rrule(x, y):
        ...     def scaled_sum_pullback(zbar):
        ...         return rc.NoTangent(), zbar * y * np.ones_like(x), zbar * np.sum(x)
        ...     return scaled_sum(x, y), scaled_sum_pullback
        >>> g = rjax.wrap(scaled_sum, out_shape=lambda x, y: y)
        >>> dx, dy = jax.jit(jax.grad(g, argnums=(0, 1)))(jnp.ones(3), 2.0)
        >>> dx.tolist(), float(dy)
        ([2.0, 2.0, 2.0], 3.0)
        >>> g.tier, rjax.wrap(np.sin).explain(jnp.ones(3)).split(": ")[1]
        ('host', 'the native tier')
    """
    cache = OpCache()
    seen: dict[Any, HostOp] = {}  # per input shapes: the op of the latest call on values (specs for jit)

    def op_for(leaves: list[Any], structure: Any, mask: tuple[bool, ...], kwargs: dict[str, Any]) -> HostOp:
        static = tuple(x for x, d in zip(leaves, mask, strict=True) if not d)
        reject_hidden_arrays(op_name(f), static, lambda v: isinstance(v, jax.core.Tracer))
        dyn = [x for x, d in zip(leaves, mask, strict=True) if d]
        specs = tuple(_spec_of(x) for x in dyn)
        kinds = tuple(_kind(x) for x in dyn)
        values = [_concrete(x) for x in dyn]
        concrete = None if any(v is None for v in values) else values
        shapes_key = (structure, mask, repr(static), repr(sorted(kwargs.items())), specs, kinds)
        key = (*shapes_key, None if out_shape is not None else value_key(concrete))
        op = cache.get(key)
        if op is None:
            examples = [np.ones(sh, dt) for sh, dt in specs]
            sds = [jax.ShapeDtypeStruct(sh, dt) for sh, dt in specs]
            attempt = None if native is False else _native_op(f, structure, static, mask, kwargs, examples,
                                                               sds)
            found = attempt if isinstance(attempt, HostOp) else None
            if isinstance(attempt, NativeAttempt):
                if native:
                    raise TypeError(attempt.refusal("jax", op_name(f))) from attempt.error
                attempt.warn("jax", op_name(f))
            earlier = seen.get(shapes_key)
            remembered = None if earlier is None else (earlier.out_structure, earlier.out_specs)
            op = found or rule_op(f, structure, static, mask, kwargs, examples,
                                  _out_specs(out_shape, structure.rebuild(merge_leaves(sds, static, mask))),
                                  concrete=concrete, kinds=kinds, remembered=remembered)
            op.reason = tier_reason("jax", op_name(f), op,
                                    attempt if isinstance(attempt, NativeAttempt) else None, native)
            cache.put(key, op)
            if concrete is not None:
                remember(seen, shapes_key, op)
        return op

    def resolve(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[HostOp, list[Any]]:
        leaves, structure = flatten(args)
        mask = tuple(is_dynamic(x) for x in leaves)
        dyn = [_jax_array(x) for x, d in zip(leaves, mask, strict=True) if d]
        return op_for(leaves, structure, mask, kwargs), dyn

    # f(*arrays) of strong types, in the native tier: the op depends on the shapes and dtypes only
    plain = OpCache()

    @functools.wraps(f)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        plain_key = None if kwargs else _plain_key(args)
        if plain_key is not None:
            known = plain.get(plain_key)
            if known is not None:
                wrapped.tier = "native"  # type: ignore[attr-defined]
                outs = call_p.bind(*args, op=known)
                return outs[0] if known.out_structure is LEAF else known.out_structure.rebuild(outs)
        op, dyn = resolve(args, kwargs)
        if plain_key is not None and op.native:
            plain.put(plain_key, op)
        wrapped.tier = op.tier  # type: ignore[attr-defined]
        return op.out_structure.rebuild(call_p.bind(*dyn, op=op))

    def explain(*args: Any, **kwargs: Any) -> str:
        """Which tier ``wrapped(*args, **kwargs)`` runs in (``"native"`` or ``"host"``), and why."""
        return explanation("jax", op_name(f), resolve(args, kwargs)[0])

    wrapped.tier = None  # type: ignore[attr-defined]
    wrapped.explain = explain  # type: ignore[attr-defined]
    return wrapped
