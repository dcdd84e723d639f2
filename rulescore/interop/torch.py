"""f's registered rules as PyTorch derivatives: ``wrap(f)`` takes and returns tensors (``torch`` extra).

A ``torch.autograd.Function`` runs any :class:`~rulescore.interop._host.HostOp`: in the
``setup_context`` style under ``torch.func`` (which needs it), in the cheaper ``forward(ctx, ...)``
style on plain tensors outside it. ``backward`` is the rrule's pullback, itself applied as
the ``setup_context`` Function on the pullback op (so double backward and ``torch.func.hessian`` work),
``jvp`` is the frule, and ``vmap`` calls the op once per batch element. A NumPy function sees
NumPy arrays (tensors are moved to the CPU and back to their device; dtypes are kept); a
function and rule written with ``rc.array_namespace`` (the native tier) run on the tensors
themselves, on any device, and their pullback is differentiated by PyTorch.

PyTorch's complex convention is rulescore's: no conversion is needed.

Example:
    >>> import torch, rulescore as rc, rulescore.interop.torch as rtorch
    >>> def cube(x):
    ...     return x ** 3
    >>> rc.scalar_rule(cube, lambda x: 3 * x ** 2)
    >>> x = torch.tensor([2.0], requires_grad=True)
    >>> rtorch.wrap(cube)(x).sum().backward()
    >>> x.grad
    tensor([12.])
"""

from __future__ import annotations

import functools
import inspect
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

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
    rule_op,
    rule_primal,
    tier_reason,
)

__all__ = ["wrap"]


def _numpy(x: torch.Tensor) -> np.ndarray:
    return x.detach().cpu().resolve_conj().resolve_neg().numpy()


def _tensor(value: Any, device: Any) -> torch.Tensor:
    return torch.as_tensor(np.asarray(value).copy(order="C"), device=device)  # 0-d stays 0-d


def _device(xs: Any) -> Any:
    return next((x.device for x in xs if isinstance(x, torch.Tensor)), torch.device("cpu"))


#: the pullback of the latest native forward pass in this thread, with its outputs, for the
#: ``setup_context`` that follows it (``forward`` has no ``ctx`` in the style ``torch.func`` needs)
_forward_pullback = threading.local()


def _as_output(o: torch.Tensor, xs: Any) -> torch.Tensor:
    """An output; an input returned as it is (np.positive) as a view: PyTorch saves the inputs."""
    return o.view_as(o) if any(o is x for x in xs) else o


def _native_outputs(op: HostOp, xs: Any) -> tuple[tuple[torch.Tensor, ...], Callable[[Any], list[Any]]]:
    """``op``'s outputs from one call of its rrule, and the pullback it returned (kept for
    ``backward``: no second rrule call there).

    PyTorch receives a detached alias of each output (same storage and version counter, no
    copy), not the tensor the rrule returned: a pullback that reads its output (``exp``,
    ``tanh``, any rule closing over ``y``) would otherwise hold the very tensor PyTorch gives
    the ``grad_fn`` whose context holds that pullback, a reference cycle that keeps every
    gradient's tensors and graph alive until the garbage collector runs."""
    assert op.primal_and_pullback is not None
    leaves, pullback = op.primal_and_pullback(xs)
    want = _torch_specs(op)
    outs = tuple([_detached_output(o, xs) for o in leaves])
    if len(outs) != len(want) or any([o.shape != sh or o.dtype != dt
                                      for o, (sh, dt) in zip(outs, want, strict=False)]):
        got = tuple((tuple(o.shape), o.dtype) for o in outs)
        raise ValueError(f"rulescore.interop.torch: the rrule of {op.name} returns outputs of (shape, dtype) "
                         f"{got} where {op.name} itself returns {want}: the rrule's primal must be "
                         f"{op.name}'s (rulescore.testing.test_rrule checks it)")
    return outs, pullback


def _detached_output(o: Any, xs: Any) -> torch.Tensor:
    """A native output as PyTorch receives it: a detached alias (see :func:`_native_outputs`), an
    input returned as it is as a view (:func:`_as_output`), a number as a tensor."""
    if type(o) is torch.Tensor:
        tensor: torch.Tensor = o
        for x in xs:
            if tensor is x:
                return _as_output(tensor, xs)
        return tensor.detach()
    return _as_output(o if isinstance(o, torch.Tensor) else torch.as_tensor(o), xs)


def _native_forward(op: HostOp, xs: Any) -> tuple[torch.Tensor, ...]:
    """:func:`_native_outputs`, the pullback handed to the ``setup_context`` that follows
    (:func:`_kept_pullback`)."""
    outs, pullback = _native_outputs(op, xs)
    _forward_pullback.latest = (outs, pullback)
    return outs


def _torch_specs(op: HostOp) -> tuple[tuple[tuple[int, ...], torch.dtype], ...]:
    found = op.cache.get("torch specs")
    if found is None:
        found = op.cache["torch specs"] = tuple(
            (tuple(sh), getattr(torch, np.dtype(dt).name)) for sh, dt in op.out_specs)
    return found


def _kept_pullback(output: Any) -> Callable[[Any], list[Any]] | None:
    """The pullback :func:`_native_forward` kept for exactly these outputs, if it did."""
    latest = getattr(_forward_pullback, "latest", None)
    _forward_pullback.latest = None
    if latest is None or len(latest[0]) != len(output) or any(
            a is not b for a, b in zip(latest[0], output, strict=True)):
        return None
    return latest[1]  # type: ignore[no-any-return]


def _run(fn: Callable[..., Any], op: HostOp, xs: Any) -> tuple[torch.Tensor, ...]:
    if op.native and fn is op.fun and op.primal_and_pullback is not None:
        return _native_forward(op, xs)
    if op.native:
        return tuple(_as_output(o, xs) for o in fn(*xs))
    outs = [np.asarray(v) for v in fn(*(_numpy(x) for x in xs))]
    if fn is op.fun:
        check_outputs(op.name, op.out_specs, outs)
    return tuple(_tensor(v, _device(xs)) for v in outs)


def _concrete(x: torch.Tensor) -> np.ndarray | None:
    """``x``'s value: under ``torch.func``'s grad and jvp transforms, the tensor inside the
    wrappers; ``None`` under ``vmap`` (a batched tensor holds every example's value)."""
    while torch._C._functorch.is_functorch_wrapped_tensor(x):
        if torch._C._functorch.is_batchedtensor(x):
            return None
        x = torch._C._functorch.get_unwrapped(x)
    with torch._C._DisableFuncTorch():  # read the storage of the tensor inside the transforms
        return _numpy(x)


def _value_key(dyn: list[torch.Tensor]) -> tuple[Any, ...] | None:
    """:func:`~rulescore.interop._host.value_key` of the tensors' values, read only where it keeps
    them (integer, boolean and 0-d tensors): a float array's values are not copied at each call."""
    parts: list[Any] = []
    for x in dyn:
        if x.ndim and (x.is_floating_point() or x.is_complex()):
            if _batched(x):
                return None
            parts.append(None)
            continue
        value = _concrete(x)
        if value is None:
            return None
        parts.append((value.dtype.str, value.tobytes()))
    return tuple(parts)


def _batched(x: torch.Tensor) -> bool:
    """``x`` is (inside ``torch.func``'s wrappers) a ``vmap`` batch: its value is not one example's."""
    while torch._C._functorch.is_functorch_wrapped_tensor(x):
        if torch._C._functorch.is_batchedtensor(x):
            return True
        x = torch._C._functorch.get_unwrapped(x)
    return False


def _kinds(leaves: list[Any], dyn: list[torch.Tensor]) -> tuple[str | None, ...]:
    """How each input reaches a host function: a Python number given by the user, or a 0-d
    tensor next to tensors of more dimensions, as a Python scalar (PyTorch's promotion reads a
    0-d tensor weakly there, as NumPy reads a Python number); other tensors as NumPy arrays."""
    dimensioned = any(x.ndim and (x.is_floating_point() or x.is_complex()) for x in dyn)
    return tuple(WEAK if isinstance(leaf, (float, complex)) or (dimensioned and x.ndim == 0) else None
                 for leaf, x in zip(leaves, dyn, strict=True))


def _spread(values: Any, mask: Any) -> list[Any]:
    it = iter(values)
    return [next(it) if d else None for d in mask]


class _Derivatives(torch.autograd.Function):
    """``op.fun``'s derivatives from ``op.vjp`` / ``op.jvp``, for :class:`_Call` and
    :class:`_PlainCall`, whose ``ctx`` both hold ``op``, ``pullback`` (the native forward pass's,
    or ``None``), the inputs and (with a pullback) the outputs saved for backward, the inputs
    saved for forward."""

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> Any:
        op: HostOp = ctx.op
        xs = ctx.saved_tensors[: len(op.in_specs)]  # read (PyTorch's check of in-place changes) first
        # first order: the forward pass's pullback (its residuals were computed without a graph, so
        # a backward pass that builds one, double backward or torch.func, runs the rrule again)
        kept = ctx.pullback is not None and not torch.is_grad_enabled()
        if kept and op.every_leaf_differentiable and all(ctx.needs_input_grad[1:]):
            return (None, *needed_cotangents(ctx.pullback(grads), xs))
        cts = [g for g, d in zip(grads, op.diff_out, strict=True) if d]  # materialized: never None
        diff_xs = [x for x, d in zip(xs, op.diff_in, strict=True) if d]
        needed = tuple(bool(n) for n, d in zip(ctx.needs_input_grad[1:], op.diff_in, strict=True) if d)
        if kept:
            xbars = needed_cotangents(ctx.pullback(cts), diff_xs, needed)
        elif op.native:  # torch operations: PyTorch differentiates the pullback itself
            xbars = needed_cotangents(op.vjp(xs, cts), diff_xs, needed)
        else:
            xbars = _Call.apply(op.vjp_op_for(needed), *xs, *cts)
        return (None, *_spread(xbars, op.diff_in))

    @staticmethod
    def jvp(ctx: Any, *tangents: Any) -> Any:
        op: HostOp = ctx.op
        xs = ctx.saved_tensors
        ts = [t if t is not None else torch.zeros_like(x)
              for t, x, d in zip(tangents[1:], xs, op.diff_in, strict=True) if d]
        # tensors here may be torch.func-wrapped, and PyTorch does not differentiate a jvp further:
        # the frule runs inside another Function's forward, whose own derivatives raise
        ydots = _Call.apply(op.jvp_op, *xs, *ts)
        return tuple(_spread(ydots, op.diff_out))


class _Call(_Derivatives):
    """``op.fun`` as a PyTorch operation in the ``setup_context`` style, which ``torch.func``'s
    transforms need (``vmap`` calls the op once per batch element)."""

    @staticmethod
    def forward(op: HostOp, *xs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return _run(op.fun, op, xs)

    @staticmethod
    def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
        op, *xs = inputs
        ctx.op = op
        # the pullback of the forward pass holds what it needs (the rrule's residuals); the inputs
        # and outputs it may read are saved too, so that PyTorch refuses a backward pass after
        # either was modified in place (the kept pullback would read the new values)
        ctx.pullback = _kept_pullback(output) if op.native else None
        ctx.save_for_backward(*xs, *(output if ctx.pullback is not None else ()))
        ctx.save_for_forward(*xs)
        if not all(op.diff_out):
            ctx.mark_non_differentiable(*(o for o, d in zip(output, op.diff_out, strict=True) if not d))

    @staticmethod
    def vmap(info: Any, in_dims: Any, op: HostOp, *xs: torch.Tensor) -> Any:
        dims = in_dims[1:]
        rows = [_Call.apply(op, *(x if d is None else x.select(d, i) for x, d in zip(xs, dims, strict=True)))
                for i in range(info.batch_size)]
        outs = tuple(torch.stack(col) for col in zip(*rows, strict=True))
        return outs, (0,) * len(outs)


class _PlainCall(_Derivatives):
    """:class:`_Call` outside ``torch.func``'s transforms, in the ``forward(ctx, ...)`` style: PyTorch
    runs one Python function per call, not ``forward`` then ``setup_context`` with the inputs
    gathered for it, and the native pullback reaches ``ctx`` directly, not through a hand-off
    (what a hand-written ctx-style ``Function`` costs, issue 31). ``torch.func`` refuses this
    style, so a call under its transforms goes through :class:`_Call`."""

    @staticmethod
    def forward(ctx: Any, op: HostOp, *xs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        ctx.op = op
        if op.native and op.primal_and_pullback is not None:
            outs, ctx.pullback = _native_outputs(op, xs)
            ctx.save_for_backward(*xs, *outs)  # PyTorch's check of in-place changes, as in _Call
        else:
            outs, ctx.pullback = _run(op.fun, op, xs), None
            ctx.save_for_backward(*xs)
        ctx.save_for_forward(*xs)
        if not all(op.diff_out):
            ctx.mark_non_differentiable(*(o for o, d in zip(outs, op.diff_out, strict=True) if not d))
        return outs


# Function.apply binds the arguments to forward's signature at every call: found once here
_Call.forward.__signature__ = inspect.signature(_Call.forward)  # type: ignore[attr-defined]

#: ``_PlainCall.apply`` without the check for torch.func's transforms, for callers outside them:
#: PyTorch's C ``apply``
_apply_outside_transforms = super(torch.autograd.Function, _PlainCall).apply
_unwrap_if_dead = torch._C._functorch.unwrap_if_dead


# -- torch.compile: any op as one custom operator, opaque to Dynamo -----------------------------------

#: the ops a compiled graph calls, by the integer its ``rulescore::call`` nodes carry
_COMPILED: dict[int, HostOp] = {}
#: each wrapped function's op finder, by ``id``, for :func:`_compiled_op_id`
_FINDERS: weakref.WeakValueDictionary[int, Callable[[list[torch.Tensor]], HostOp]] = \
    weakref.WeakValueDictionary()


def _compiled_id(op: HostOp) -> int:
    _COMPILED[id(op)] = op
    return id(op)


@torch.compiler.assume_constant_result
def _compiled_op_id(finder: int, *xs: torch.Tensor) -> int:
    """The op of a wrapped function at these tensors (example values while Dynamo traces), as the
    integer a graph holds: Dynamo calls this once per compilation and keeps the result, and its
    guards on the tensors' shapes, dtypes and devices keep the graph to calls the op fits."""
    return _compiled_id(_FINDERS[finder](list(xs)))


@torch.library.custom_op("rulescore::call", mutates_args=())
def _compiled_call(op_id: int, xs: list[torch.Tensor]) -> list[torch.Tensor]:
    """``op.fun`` on tensors (NumPy on the host for a host op): the node a compiled graph holds."""
    op = _COMPILED[op_id]
    got = tuple(tuple(x.shape) for x in xs)
    if got != tuple(tuple(sh) for sh, _ in op.in_specs):
        raise ValueError(f"rulescore.interop.torch: the compiled call of {op.name} got inputs of shapes "
                         f"{got}, compiled for {[sh for sh, _ in op.in_specs]}: compile with dynamic=False")
    outs = _run(op.fun, op, xs) if not op.native else op.fun(*xs)
    return [o.clone() if any(o is x for x in xs) else o for o in outs]  # a custom op returns new tensors


@_compiled_call.register_fake
def _compiled_call_fake(op_id: int, xs: list[torch.Tensor]) -> list[torch.Tensor]:
    op = _COMPILED[op_id]
    device = xs[0].device if xs else torch.device("cpu")
    return [torch.empty(sh, dtype=dt, device=device) for sh, dt in _torch_specs(op)]


def _compiled_setup_context(ctx: Any, inputs: Any, output: Any) -> None:
    op_id, xs = inputs
    ctx.op = _COMPILED[op_id]
    ctx.needed = tuple(x.requires_grad for x, d in zip(xs, ctx.op.diff_in, strict=True) if d)
    ctx.save_for_backward(*xs)


def _compiled_backward(ctx: Any, grads: list[torch.Tensor | None]) -> tuple[None, list[torch.Tensor | None]]:
    op: HostOp = ctx.op
    xs = list(ctx.saved_tensors)
    cts = [torch.zeros(sh, dtype=dt, device=xs[0].device) if g is None else g
           for g, (sh, dt), d in zip(grads, _torch_specs(op), op.diff_out, strict=True) if d]
    xbars = _compiled_call(_compiled_id(op.vjp_op_for(ctx.needed)), [*xs, *cts])
    return None, _spread(xbars, op.diff_in)


_compiled_call.register_autograd(_compiled_backward, setup_context=_compiled_setup_context)


def _numpy_dtype(dtype: torch.dtype) -> Any:
    return np.dtype(str(dtype).removeprefix("torch."))  # float32, float64, int64, complex128, bool


def _native_op(f: Any, structure: Structure, static: tuple[Any, ...], mask: tuple[bool, ...],
               kwargs: dict[str, Any], examples: list[Any], metas: list[torch.Tensor],
               ) -> HostOp | NativeAttempt:
    """The native-tier op when ``f`` and its rrule run on tensors (tried on ``meta`` tensors,
    nothing computed), else why not."""
    merged = structure.rebuild(merge_leaves(metas, static, mask))
    try:
        out, via_rule = f(*merged, **kwargs), False
    except Exception as err:  # a NumPy function (np.sin): its rule's native tier, if it has one
        try:
            out, via_rule = rule_primal(f, merged, kwargs), True
        except Exception as rule_err:  # f and its rule need NumPy arrays: the host tier
            return NativeAttempt(err, function_ran=False, rule_error=rule_err)
    try:
        leaves, out_structure = flatten(out)
        specs = tuple((tuple(v.shape), _numpy_dtype(v.dtype)) for v in leaves)
        op = rule_op(f, structure, static, mask, kwargs, examples, (out_structure, specs), native=True,
                     primal_from_rule=via_rule)
        op.vjp(metas, [torch.ones(sh, dtype=v.dtype, device="meta")
                       for (sh, _), v, d in zip(specs, leaves, op.diff_out, strict=True) if d])
    except Exception as err:  # the rule needs NumPy arrays: the host tier
        return NativeAttempt(err, function_ran=not via_rule)
    return op


def _out_specs(out_shape: Any, metas: Any) -> tuple[Structure, tuple[Spec, ...]] | None:
    """The output structure and specs an author gives: ``out_shape`` called on the arguments as
    ``meta`` tensors (shapes and dtypes, no values), or a fixed output; leaves are anything with
    a shape and a dtype (tensors, NumPy arrays, ``jax.ShapeDtypeStruct``)."""
    if out_shape is None:
        return None
    leaves, structure = flatten(out_shape(*metas) if callable(out_shape) else out_shape)
    return structure, tuple((tuple(v.shape), _numpy_dtype(v.dtype) if isinstance(v.dtype, torch.dtype)
                             else np.dtype(v.dtype)) for v in leaves)


def wrap(f: Callable[..., Any], native: bool | None = None, out_shape: Any = None) -> Callable[..., Any]:
    """``f`` on tensors, with derivatives from ``f``'s registered rules.

    Arguments may be tensors, Python floats, and tuples / lists / dicts of them; other leaves
    (ints, strings) are passed as they are and get no gradient, integer tensors get ``None``.
    Outputs keep the structure ``f`` returns; dtypes are kept and outputs go to the device of
    the first tensor argument. ``native=None`` runs ``f`` natively on the tensors when ``f`` and
    its rrule work on them (written with ``rc.array_namespace``), otherwise on the host with NumPy
    (with a :class:`~rulescore.interop._host.NativeTierWarning` giving the reason when ``f`` runs
    on tensors but its rule does not; ``native=True`` raises with it instead).
    A host function's output shapes come from a call on the actual values, or, under
    ``torch.func.vmap`` (no values), from calls on ones and random values of the input shapes;
    where those fail, give them: ``out_shape`` is a callable from the arguments as ``meta``
    tensors to the output (``meta`` tensors, or anything with a shape and a dtype), or a fixed
    output spec.

    In the native tier the rrule runs once, in the forward pass, and ``backward`` calls the
    pullback it returned (a backward pass that builds a graph, ``create_graph=True`` or
    ``torch.func``, runs the rrule again on the saved inputs, so PyTorch differentiates it). A
    rule registered or replaced after ``wrap`` takes effect at the next call.
    ``wrapped.tier`` is the tier of the latest call (``"native"`` or ``"host"``; ``None``
    before the first), and ``wrapped.explain(*args)`` says which tier a call on ``args`` runs
    in and why. Under ``torch.compile``, a call on tensors of a floating dtype (positional, at
    least one dimension) is one custom operator, ``rulescore::call``, in either tier: no graph
    break (``fullgraph=True`` works); other calls break the graph there.

    Example:
        >>> import numpy as np, torch, rulescore.interop.torch as rtorch
        >>> g = rtorch.wrap(np.sin)          # the library's rules for np.sin
        >>> x = torch.tensor([0.5, 1.0], dtype=torch.float32, requires_grad=True)
        >>> (dx,) = torch.autograd.grad(g(x).sum(), x, create_graph=True)
        >>> torch.allclose(dx, torch.cos(x)), dx.dtype, g.tier
        (True, torch.float32, 'native')
        >>> print(g.explain(x))  # doctest: +ELLIPSIS
        rulescore.interop.torch.wrap(sin) at float32[2]: the native tier: sin and its rrule run on torch...
    """
    cache = OpCache()

    def op_for(given: list[Any], leaves: list[Any], structure: Structure, mask: tuple[bool, ...],
               kwargs: dict[str, Any]) -> HostOp:
        static = tuple(x for x, d in zip(leaves, mask, strict=True) if not d)
        reject_hidden_arrays(op_name(f), static, lambda v: isinstance(v, torch.Tensor) and (
            v.requires_grad or torch._C._functorch.is_functorch_wrapped_tensor(v)))
        dyn = [x for x, d in zip(leaves, mask, strict=True) if d]
        kinds = _kinds([x for x, d in zip(given, mask, strict=True) if d], dyn)
        key = (structure, mask, repr(static), repr(sorted(kwargs.items())),
               tuple((tuple(x.shape), x.dtype, x.device.type) for x in dyn), kinds,
               None if out_shape is not None else _value_key(dyn))
        op = cache.get(key)
        if op is None:
            values = [_concrete(x) for x in dyn]
            concrete = None if any(v is None for v in values) else values
            examples = [np.ones(tuple(x.shape), _numpy_dtype(x.dtype)) for x in dyn]
            metas = [torch.empty(tuple(x.shape), dtype=x.dtype, device="meta") for x in dyn]
            attempt = None if native is False else _native_op(f, structure, static, mask, kwargs, examples,
                                                               metas)
            found = attempt if isinstance(attempt, HostOp) else None
            if isinstance(attempt, NativeAttempt):
                if native:
                    raise TypeError(attempt.refusal("torch", op_name(f))) from attempt.error
                attempt.warn("torch", op_name(f))
            given_out = _out_specs(out_shape, structure.rebuild(merge_leaves(metas, static, mask)))
            op = found or rule_op(f, structure, static, mask, kwargs, examples, given_out, concrete=concrete,
                                  kinds=kinds)
            op.reason = tier_reason("torch", op_name(f), op,
                                    attempt if isinstance(attempt, NativeAttempt) else None, native)
            cache.put(key, op)
        return op

    # f(*tensors) of floating dtypes and at least one dimension, outside torch.func: the op depends
    # on shapes, dtypes and devices only (no values read, no 0-d promotion, nothing static)
    plain = OpCache()

    def plain_op(xs: list[torch.Tensor]) -> HostOp:
        given, structure = flatten(tuple(xs))
        return op_for(given, given, structure, (True,) * len(xs), {})

    _FINDERS[id(plain_op)] = plain_op  # weakly: as long as ``wrapped`` lives

    @functools.wraps(f)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if torch.compiler.is_compiling() and not kwargs and all(
                isinstance(x, torch.Tensor) and x.ndim and (x.is_floating_point() or x.is_complex())
                for x in args):
            compiled = _COMPILED[_compiled_op_id(id(plain_op), *args)]
            return compiled.out_structure.rebuild(_compiled_call(id(compiled), list(args)))
        plain_key = None
        if not kwargs and all(type(x) is torch.Tensor for x in args) and \
                not torch._C._are_functorch_transforms_active():
            plain_key = tuple((x.shape, x.dtype, x.device) for x in args)
            known = plain.get(plain_key)
            if known is not None:
                wrapped.tier = known.tier  # type: ignore[attr-defined]
                # what Function.apply does outside torch.func's transforms, tensors of transforms that
                # ended unwrapped as it unwraps them, minus the binding of the arguments (see above)
                outs = _apply_outside_transforms(known, *map(_unwrap_if_dead, args))
                return outs[0] if known.out_structure is LEAF else known.out_structure.rebuild(outs)
            if not all(x.ndim and (x.is_floating_point() or x.is_complex()) for x in args):
                plain_key = None
        op, dyn = resolve(args, kwargs)
        if plain_key is not None:
            plain.put(plain_key, op)
        wrapped.tier = op.tier  # type: ignore[attr-defined]
        return op.out_structure.rebuild(_Call.apply(op, *dyn))

    def resolve(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[HostOp, list[torch.Tensor]]:
        given, structure = flatten(args)
        mask = tuple(is_dynamic(x) for x in given)
        # Python floats cross as float64 tensors, and reach a host function as Python floats
        leaves = [torch.as_tensor(np.asarray(x)) if d and not isinstance(x, torch.Tensor) else x
                  for x, d in zip(given, mask, strict=True)]
        dyn = [x for x, d in zip(leaves, mask, strict=True) if d]
        return op_for(given, leaves, structure, mask, kwargs), dyn

    def explain(*args: Any, **kwargs: Any) -> str:
        """Which tier ``wrapped(*args, **kwargs)`` runs in (``"native"`` or ``"host"``), and why."""
        return explanation("torch", op_name(f), resolve(args, kwargs)[0])

    wrapped.tier = None  # type: ignore[attr-defined]
    wrapped.explain = explain  # type: ignore[attr-defined]
    return wrapped
