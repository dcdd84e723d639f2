"""Helpers that declare rules without writing pullbacks by hand.

``scalar_rule`` derives both the frule and the rrule of an (element-wise) function from its
partial derivatives; ``non_differentiable`` declares that a function has no derivative;
``ignore_derivatives`` stops gradients at a value.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore._arithmetic import conj
from rulescore._checks import callable_name
from rulescore._fitting import as_array_tangent, as_arrays, fit, proj, stand_in
from rulescore._namespace import foreign_namespace, is_complex_array, unbroadcast_to
from rulescore._registry import register_rules
from rulescore._rule_pair import DERIVERS, SCALAR_DERIVERS, RulePair, TypeSpec
from rulescore._structural import structural
from rulescore._tangent import Tangent
from rulescore._thunks import Thunk, unthunk
from rulescore._zeros import AbstractZero, NoTangent, ZeroTangent

_NT = NoTangent()
_ZT = ZeroTangent()


def _positional_count(fn: Callable[..., Any]) -> int:
    """How many positional parameters ``fn`` has without a default (-1: any number, or unknown).

    Example:
        >>> _positional_count(lambda x, xp=None: x), _positional_count(lambda *a: a)
        (1, -1)
    """
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return -1
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return -1
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(1 for p in params if p.kind in positional and p.default is p.empty)


def _wants(partials: Callable[..., Any], name: str) -> bool:
    code = getattr(partials, "__code__", None)
    if code is not None:  # a Python function: its code names its parameters (cheaper at import)
        return name in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    try:
        return name in inspect.signature(partials).parameters
    except (TypeError, ValueError):
        return False


@structural
def _call_kind(args: tuple[Any, ...], y: Any, unmasked: bool) -> tuple[bool, bool, bool]:
    """What an element-wise rule's pullback may skip, from types alone (one call for an outer
    level to trace): ``(numpy_scalar, float_inputs, no_sequences)``.

    ``numpy_scalar``: the output is a NumPy float64 (NumPy warns about a division by zero);
    ``float_inputs``: real scalars throughout, no mask; ``no_sequences``: an array output and no
    list or tuple argument to convert (``as_arrays`` would return the arguments unchanged: arrays
    and scalars, ``np.logaddexp(0.0, z)``). (One array without options takes ``one_array_rrule``.)
    """
    ty = type(y)
    numpy_scalar = ty is np.float64
    if ty is float or numpy_scalar:
        for a in args:
            if type(a) is not float and type(a) is not np.float64:
                return numpy_scalar, False, False
        return numpy_scalar, unmasked, False
    for a in args:
        ta = type(a)
        if ta is list or ta is tuple:
            return False, False, False
    return False, False, True


def _times_conj(ybar: Any, d: Any) -> Any:
    """``ybar * conj(d)``: an integer ``1``/``-1`` passes ``ybar`` through, a zero stays."""
    if type(d) is int:
        if d == 1:
            return ybar
        if d == -1:
            return -ybar
    elif type(d) is np.ndarray:
        return ybar * (d if d.dtype.kind != "c" else np.conj(d))  # conj inline: one call less nested
    elif isinstance(d, AbstractZero):
        return d
    return ybar * conj(d)


def _times(d: Any, xdot: Any) -> Any:
    """``d * xdot`` with the same pass-through for ``1``/``-1``."""
    if type(d) is int:
        if d == 1:
            return xdot
        if d == -1:
            return -xdot
    return d * xdot


def mask(where: Any, g: Any) -> Any:
    """``g`` zeroed where the ufunc's ``where`` mask is ``False`` (``where=None``: no mask); a
    zero ``g`` (an absent entry of a tuple output's cotangent, which the rule contract hands
    rules as ``ZeroTangent()``) stays a zero, so the rules that mask never test for zeros.

    Example:
        >>> import numpy as np
        >>> from rulescore._helpers import mask
        >>> mask(np.array([True, False]), np.ones(2))
        array([1., 0.])
    """
    if where is None or isinstance(g, AbstractZero):
        return g
    return np.where(where, g, 0)


def partials_rules(
    f: Any,
    partials: Callable[..., Any],
    *types: TypeSpec,
    needs_inputs: bool = True,
    check_kwargs: Callable[[Any, dict[str, Any]], Any] | None = None,
    errstate: bool = False,
    native: str | None = None,
    native_complex: bool = True,
    outputs: int = 1,
) -> RulePair:
    """The frule and rrule of an element-wise ``f`` derived from its partial derivatives (not
    registered: put the pair in a family's ``RULES`` table, or call :func:`scalar_rule`).

    ``partials(*args)`` returns one partial derivative per argument (a bare value for a single
    argument); if it takes a ``result`` keyword it also receives ``f(*args)``. A partial may be
    a number or an array (broadcasting is summed back onto each argument), the integer ``1`` or
    ``-1`` (the cotangent passes through, negated for ``-1``, without a multiplication),
    ``ZeroTangent()`` (a zero derivative) or ``NoTangent()`` (an argument with no tangent space).
    For complex arguments ``f`` must be holomorphic: the pullback multiplies by the conjugate.

    Keyword options:

    - ``needs_inputs=False``: the partials read ``result`` only (``exp``, ``tanh``, ``+``); the
      pullback then keeps only the inputs' shapes and dtypes (arrays are replaced by
      :func:`~rulescore._fitting.stand_in`), so the inputs can be freed before the backward pass.
    - ``check_kwargs(f, kwargs)``: validates a call's keyword arguments (raise to refuse one) and
      returns a ``where`` mask or ``None``; cotangents and tangents are zero where the mask is
      ``False``. Without it keyword arguments are passed to ``f`` unchecked.
    - ``errstate=True``: partials are evaluated with NumPy's division-by-zero warnings off (an
      infinite derivative, such as that of ``sqrt`` at ``0``, is the true limit, not an error).
    - The native tier: on non-NumPy arrays (JAX, PyTorch, CuPy: see
      :func:`rulescore.array_namespace`) the partials receive ``xp=`` (when they take it) to
      compute with, and cotangents are summed back in that namespace, so the rules run on those
      arrays (traced by ``jax.jit``, on any device) when ``f`` and the partials do (write them
      with ``rc.array_namespace`` / ``xp``); NumPy input takes the usual path. ``native="name"``:
      the primal there is ``xp.name`` of the arrays' namespace instead of ``f`` (for NumPy's
      functions, which would convert the arrays).
      ``native_complex=False``: the native primal refuses complex arrays (NumPy's order of
      complex numbers, for ``maximum``, which array libraries do not define).
    - ``outputs=n``: ``f`` returns a tuple of ``n`` outputs, and ``partials`` a tuple of ``n``
      rows, one per output, each holding one partial per argument (a bare value for a single
      argument): ChainRules' ``@scalar_rule`` with several outputs. The other options are for
      single outputs.

    Example:
        >>> import numpy as np, rulescore as rc
        >>> def cube(x): return x ** 3
        >>> pair = rc.partials_rules(cube, lambda x: 3 * x ** 2)
        >>> pair.rrule(2.0)[1](1.0), pair.frule((None, 1.0), 2.0)
        ((NoTangent(), 12.0), (8.0, 12.0))
        >>> def sub(x, y): return x - y
        >>> pair = rc.partials_rules(sub, lambda x, y: (1, -1), needs_inputs=False)
        >>> pair.rrule(np.ones(2), 1.0)[1](np.ones(2))
        (NoTangent(), array([1., 1.]), -2.0)
        >>> def where_of(f, kwargs): return kwargs.get("where")
        >>> pair = rc.partials_rules(np.sqrt, lambda x, result: 0.5 / result,
        ...                          check_kwargs=where_of, errstate=True)
        >>> mask = np.array([True, False])
        >>> pair.rrule(np.array([4.0, 0.0]), where=mask, out=np.zeros(2))[1](np.ones(2))
        (NoTangent(), array([0.25, 0.  ]))
        >>> def polar(r, t): return r * np.cos(t), r * np.sin(t)
        >>> pair = rc.partials_rules(polar, lambda r, t: ((np.cos(t), -r * np.sin(t)),
        ...                                               (np.sin(t), r * np.cos(t))), outputs=2)
        >>> pair.rrule(2.0, 0.0)[1](rc.Tangent[tuple](1.0, 3.0))
        (NoTangent(), 1.0, 6.0)
    """
    return RulePair(f, types=types, partials=partials, needs_inputs=needs_inputs, check_kwargs=check_kwargs,
                    errstate=errstate, native=native, native_complex=native_complex,
                    outputs=outputs).resolved()


def partials_rule_functions(pair: RulePair) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The rrule and frule that the entry ``pair`` derives from its ``partials`` (see
    :func:`partials_rules` for the options).

    Example:
        >>> import rulescore as rc
        >>> def cube(x): return x ** 3
        >>> reverse, forward = partials_rule_functions(rc.RulePair(cube, partials=lambda x: 3 * x ** 2))
        >>> reverse.__name__, reverse(2.0)[1](1.0)
        ('cube_rrule', (NoTangent(), 12.0))
    """
    f, partials, needs_inputs, check_kwargs = pair.primal, pair.partials, pair.needs_inputs, pair.check_kwargs
    errstate, native, native_complex = pair.errstate, pair.native, pair.native_complex
    assert partials is not None
    if pair.outputs != 1:
        return _several_outputs_rules(f, partials, pair.outputs)
    assert native is None or isinstance(native, str), "native= of partials names a function of xp"
    name = callable_name(f).rsplit(".", 1)[-1]
    pullback_name = f"{name}_pullback"
    with_result = _wants(partials, "result")
    native_rrule, native_frule = _native_rules(f, name, native, native_complex, partials, with_result)

    def partials_at(args: tuple[Any, ...], y: Any) -> tuple[Any, ...]:
        d = partials(*args, result=y) if with_result else partials(*args)
        return d if type(d) is tuple else (d,)

    def quiet_partials_at(args: tuple[Any, ...], y: Any, where: Any) -> tuple[Any, ...]:
        if where is not None:
            with np.errstate(divide="ignore", invalid="ignore"):
                return partials_at(args, y)
        if errstate:
            with np.errstate(divide="ignore"):
                return partials_at(args, y)
        return partials_at(args, y)

    def one_array_rrule(x: Any) -> Any:
        """``partials_rrule(x)`` of one NumPy array, no options, no warnings to silence: what its
        general path computes (one partial, times the cotangent, projected), without its questions."""
        y = f(x)
        if not needs_inputs:
            x = stand_in(x)

        def partials_pullback(ybar: Any) -> Any:
            d = partials(x, result=y) if with_result else partials(x)
            if type(d) is tuple:
                d = d[0]
            if type(d) is np.ndarray and d.dtype.kind != "c":  # (_times_conj's commonest case, inline:
                return _NT, proj(x, ybar * d)  # one call less for an outer level to trace)
            return _NT, proj(x, _times_conj(ybar, d))

        partials_pullback.__qualname__ = partials_pullback.__name__ = pullback_name
        return y, partials_pullback

    def partials_rrule(*args: Any, **kwargs: Any) -> Any:
        first = type(args[0]) if args else None
        if first is _NDARRAY and not kwargs and not errstate and len(args) == 1:
            return one_array_rrule(args[0])  # the first-order hot path (an array's tanh, exp, log)
        where = check_kwargs(f, kwargs) if kwargs and check_kwargs is not None else None
        if first is not None and (first not in _NUMPY_TYPES or (
                args[-1] is not args[0] and type(args[-1]) not in _NUMPY_TYPES)) \
                and (xp := foreign_namespace(args)) is not None:
            return native_rrule(xp, args, kwargs)  # NumPy would convert them (or warn, for a tensor)
        y = f(*args, **kwargs)
        if not needs_inputs:
            args = (*[stand_in(a) for a in args],)

        def partials_pullback(ybar: Any) -> Any:
            if float_inputs and (type(ybar) is float or type(ybar) is np.float64):
                # the scalar hot path: real floats (or the float64 scalars NumPy returns) throughout
                if numpy_scalar and errstate:
                    ds = quiet_partials_at(args, y, None)
                else:
                    d = partials(*args, result=y) if with_result else partials(*args)
                    ds = d if type(d) is tuple else (d,)
                if len(ds) == 1 and (type(ds[0]) is float or type(ds[0]) is np.float64):
                    d1, ta = ybar * ds[0], type(args[0])  # projection is a conversion
                    return (_NT, d1 if type(d1) is ta else ta(d1))
                return (_NT, *[proj(a, _times_conj(ybar, d)) for a, d in zip(args, ds, strict=True)])
            ds = quiet_partials_at(args if no_sequences else as_arrays(args), y, where)
            if where is None and len(args) == 2 and len(ds) == 2:  # binary ufuncs: no loop to trace
                (a0, a1), (d0, d1) = args, ds
                if type(a0) is not np.ndarray and type(a1) is np.ndarray:
                    # lazy: a scalar broadcast against an array is often a literal (logaddexp(0.0, z)),
                    # and its cotangent is a sum
                    lazy = Thunk(lambda: proj(a0, _times_conj(ybar, d0)))
                    return _NT, lazy, proj(a1, _times_conj(ybar, d1))
                return _NT, proj(a0, _times_conj(ybar, d0)), proj(a1, _times_conj(ybar, d1))
            out = []
            for a, d in zip(args, ds, strict=True):
                g = _times_conj(ybar, d)
                if where is not None and not isinstance(g, AbstractZero):
                    g = np.where(where, g, 0)
                out.append(proj(a, g))
            return (_NT, *out)

        numpy_scalar, float_inputs, no_sequences = _call_kind(args, y, where is None)
        partials_pullback.__qualname__ = partials_pullback.__name__ = pullback_name
        return y, partials_pullback

    def partials_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
        if not kwargs and not errstate and len(args) == 1 and type(args[0]) is np.ndarray:
            # the nested hot path (one NumPy array, no options): few calls for an outer level to trace
            y = f(*args)
            d = partials(*args, result=y) if with_result else partials(*args)
            d, xdot = d[0] if type(d) is tuple else d, tangents[1]
            zero = isinstance(xdot, AbstractZero) or isinstance(d, AbstractZero)
            return y, fit(y, _ZT if zero else _times(d, xdot))
        where = check_kwargs(f, kwargs) if check_kwargs is not None else None
        if args and (type(args[0]) not in _NUMPY_TYPES or type(args[-1]) not in _NUMPY_TYPES) \
                and (xp := foreign_namespace(args)) is not None:
            return native_frule(xp, tangents, args, kwargs)
        y = f(*args, **kwargs)
        ds = quiet_partials_at(as_arrays(args), y, where)
        ydot: Any = _ZT
        for a, d, xdot in zip(args, ds, tangents[1:], strict=True):
            if not isinstance(xdot, AbstractZero) and not isinstance(d, AbstractZero):
                if type(a) is list or type(a) is tuple:
                    xdot = as_array_tangent(xdot)
                ydot = ydot + _times(d, xdot)
        if where is not None and not isinstance(ydot, AbstractZero):
            ydot = np.where(where, ydot, 0)
        return y, fit(y, ydot)

    partials_rrule.__name__ = partials_rrule.__qualname__ = f"{name}_rrule"
    partials_frule.__name__ = partials_frule.__qualname__ = f"{name}_frule"
    return partials_rrule, partials_frule


def _several_outputs_rules(f: Any, partials: Callable[..., Any], n_outputs: int,
                           ) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The rules of :func:`partials_rules` for an ``f`` returning a tuple of ``n_outputs`` outputs;
    ``partials`` returns one row of partials (one per argument) per output. NumPy arrays and
    the arrays of another namespace (the native tier) alike."""
    name = callable_name(f).rsplit(".", 1)[-1]
    with_result, with_xp = _wants(partials, "result"), _wants(partials, "xp")

    def rows_at(args: tuple[Any, ...], y: Any) -> list[tuple[Any, ...]]:
        options: dict[str, Any] = {"result": y} if with_result else {}
        if with_xp:
            options["xp"] = foreign_namespace(args) or np
        rows = partials(*args, **options)
        rows = [r if type(r) is tuple else (r,) for r in (rows if type(rows) is tuple else (rows,))]
        if len(rows) != n_outputs or any(len(r) != len(args) for r in rows):
            raise TypeError(f"the partials of {name} (declared with outputs={n_outputs}) must return "
                            f"{n_outputs} rows, one per output, of {len(args)} partial(s) each (one per "
                            f"argument); got {len(rows)} row(s) of {[len(r) for r in rows]}")
        return rows

    def primal(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        y = f(*args, **kwargs)
        if not isinstance(y, tuple) or len(y) != n_outputs:
            raise TypeError(f"{name} was declared with outputs={n_outputs}: it must return a tuple of "
                            f"{n_outputs}, got {type(y).__name__}")
        return y

    def several_outputs_rrule(*args: Any, **kwargs: Any) -> Any:
        y = primal(args, kwargs)

        def several_outputs_pullback(ybar: Any) -> Any:
            ybars = [unthunk(b) for b in (ybar.backing if isinstance(ybar, Tangent) else ybar)]
            rows = rows_at(args, y)
            xp = foreign_namespace(args)
            out = []
            for i, a in enumerate(args):
                g: Any = _ZT
                for b, row in zip(ybars, rows, strict=True):
                    if b is None or isinstance(b, AbstractZero) or isinstance(row[i], AbstractZero):
                        continue
                    d = row[i]
                    if xp is None or type(d) is int:
                        g = g + _times_conj(b, d)
                    else:
                        g = g + b * (xp.conj(d) if is_complex_array(xp, d) else d)
                out.append(_onto_argument(a, g))
            return (_NT, *out)

        several_outputs_pullback.__qualname__ = several_outputs_pullback.__name__ = f"{name}_pullback"
        return y, several_outputs_pullback

    def several_outputs_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
        y = primal(args, kwargs)
        rows = rows_at(args, y)
        ydots = []
        for y_k, row in zip(y, rows, strict=True):
            ydot: Any = _ZT
            for d, xdot in zip(row, tangents[1:], strict=True):
                xdot = unthunk(xdot)
                if not (xdot is None or isinstance(xdot, AbstractZero) or isinstance(d, AbstractZero)):
                    ydot = ydot + _times(d, xdot)
            ydots.append(_onto_output(y_k, ydot))
        return y, Tangent[tuple](*ydots)  # type: ignore[type-arg]

    several_outputs_rrule.__name__ = several_outputs_rrule.__qualname__ = f"{name}_rrule"
    several_outputs_frule.__name__ = several_outputs_frule.__qualname__ = f"{name}_frule"
    return several_outputs_rrule, several_outputs_frule


def _onto_argument(x: Any, g: Any) -> Any:
    """The cotangent ``g`` summed back onto the argument ``x`` (NumPy, or another namespace)."""
    if isinstance(g, AbstractZero):
        return g
    xp = foreign_namespace((x,))
    if xp is None:
        return proj(x, g)
    return unbroadcast_to(xp, x, g if hasattr(g, "shape") else xp.asarray(g))


def _onto_output(y: Any, ydot: Any) -> Any:
    """The tangent ``ydot`` broadcast onto the output ``y`` (NumPy, or another namespace)."""
    if isinstance(ydot, AbstractZero):
        return ydot
    xp = foreign_namespace((y,))
    if xp is None:
        return fit(y, ydot)
    ydot = ydot if hasattr(ydot, "shape") else xp.asarray(ydot)
    if tuple(ydot.shape) != tuple(y.shape):
        ydot = xp.broadcast_to(ydot, tuple(y.shape))
    return unbroadcast_to(xp, y, ydot)


#: Argument types NumPy computes with: the first or last argument of any other type (a JAX or
#: PyTorch array) sends an element-wise rule with a native tier there (the binary ufuncs' rules
#: see both; a middle argument does not exist).
_NDARRAY = np.ndarray  # (a global: one load, also in rewritten code)
_NUMPY_TYPES = frozenset({float, complex, bool, int, list, tuple, np.ndarray, np.float64, np.float32,
                          np.float16, np.complex128, np.complex64, np.bool_, np.int64, np.int32})


def _native_rules(f: Any, name: str, native: str | None, native_complex: bool, partials: Callable[..., Any],
                  with_result: bool) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The rrule and frule of :func:`partials_rules` on arrays of another array namespace ``xp``.

    What depends on the rule alone is decided here, once: how the partials are called (with
    ``result=``, ``xp=``), whether the primal is ``xp.<native>``. The pullback keeps the inputs,
    and the output only when the partials read it, as a hand-written backward would."""
    with_xp = _wants(partials, "xp")

    def native_partials(xp: Any, args: tuple[Any, ...], y: Any) -> tuple[Any, ...]:
        if with_result:
            d = partials(*args, result=y, xp=xp) if with_xp else partials(*args, result=y)
        else:
            d = partials(*args, xp=xp) if with_xp else partials(*args)
        return d if type(d) is tuple else (d,)

    def refuse_kwargs(xp: Any, kwargs: dict[str, Any]) -> None:
        if any(v is not None for k, v in kwargs.items() if k != "where") or \
                kwargs.get("where", True) is not True:
            raise TypeError(f"numpy.{name}: its native rule runs {native}(*arrays) of the arrays' own "
                            f"namespace ({getattr(xp, '__name__', xp)}) with no keyword arguments; "
                            f"got {sorted(kwargs)}: call it on NumPy arrays for those")

    def native_primal(xp: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if native is None:  # f itself runs on the arrays (written with rc.array_namespace)
            return f(*args, **kwargs)
        primal = getattr(xp, native, None)
        if primal is None:
            raise TypeError(f"numpy.{name}: its native rule runs {native}(*arrays), which the arrays' "
                            f"own namespace ({getattr(xp, '__name__', xp)}) does not have: call it on NumPy "
                            "arrays")
        if kwargs:
            refuse_kwargs(xp, kwargs)
        if not native_complex and any(is_complex_array(xp, a) for a in args):
            raise TypeError(f"numpy.{name}: its native rule takes real arrays only (NumPy orders complex "
                            "numbers lexicographically; array libraries do not): call it on NumPy arrays")
        return primal(*args)

    def native_rrule(xp: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        y = native_primal(xp, args, kwargs)
        result = y if with_result else None  # the pullback holds the output only if the partials read it

        if len(args) == 1:
            (x,) = args

            def partials_pullback(ybar: Any) -> Any:
                d = native_partials(xp, args, result)
                return _NT, _native_cotangent(xp, x, ybar, d[0])
        else:
            def partials_pullback(ybar: Any) -> Any:
                ds = native_partials(xp, args, result)
                return (_NT, *[_native_cotangent(xp, a, ybar, d) for a, d in zip(args, ds, strict=True)])

        partials_pullback.__qualname__ = partials_pullback.__name__ = f"{name}_pullback"
        return y, partials_pullback

    def native_frule(xp: Any, tangents: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        y = native_primal(xp, args, kwargs)
        ydot: Any = None
        for d, xdot in zip(native_partials(xp, args, y), tangents[1:], strict=True):
            if xdot is None or isinstance(xdot, AbstractZero) or isinstance(d, AbstractZero):
                continue
            term = _times(d, xdot)
            ydot = term if ydot is None else ydot + term
        if ydot is None:
            return y, _ZT
        if tuple(getattr(ydot, "shape", ())) != tuple(y.shape):
            ydot = xp.broadcast_to(ydot, tuple(y.shape))
        return y, unbroadcast_to(xp, y, ydot if hasattr(ydot, "shape") else xp.asarray(ydot))

    return native_rrule, native_frule


def _native_cotangent(xp: Any, x: Any, ybar: Any, d: Any) -> Any:
    """``ybar * conj(d)`` summed back onto the argument ``x`` (an array of namespace ``xp``); a
    product already of ``x``'s shape and dtype (an element-wise function of one array, or of
    arrays of one shape) is returned as it is."""
    if isinstance(d, AbstractZero) or not hasattr(x, "shape"):
        return d if isinstance(d, AbstractZero) else _NT  # a Python number: a constant here
    if type(d) is int and d in (1, -1):
        g = ybar if d == 1 else -ybar
    else:
        g = ybar * (xp.conj(d) if is_complex_array(xp, d) else d)
    if not hasattr(g, "shape"):
        return unbroadcast_to(xp, x, xp.asarray(g))
    if g.shape == x.shape and g.dtype == x.dtype:
        return g
    return unbroadcast_to(xp, x, g)


def scalar_rule(f: Any, partials: Callable[..., Any], *types: TypeSpec, **options: Any) -> None:
    """Register an frule and an rrule for ``f`` from its partial derivatives: the entry
    ``RulePair(f, partials=partials, types=types, **options)``, registered (``options`` are those
    of :func:`partials_rules`).

    Example:
        >>> import rulescore as rc
        >>> def cube(x): return x ** 3
        >>> rc.scalar_rule(cube, lambda x: 3 * x ** 2)
        >>> y, back = rc.rrule(cube, 2.0)
        >>> y, back(1.0), rc.frule((None, 1.0), cube, 2.0)
        (8.0, (NoTangent(), 12.0), (8.0, 12.0))
    """
    register_rules(RulePair(f, types=types, partials=partials, **options))


def non_differentiable_rules(f: Any, *types: TypeSpec) -> RulePair:
    """The entry ``RulePair(f, types=types, kind="non_differentiable")`` with its rules built:
    ``NoTangent`` for every input (:func:`non_differentiable` registers it). Engines see the
    ``non_differentiable`` kind and skip recording.

    Example:
        >>> import rulescore as rc
        >>> def sign_of(x): return 1 if x > 0 else -1
        >>> rc.non_differentiable_rules(sign_of).kind
        'non_differentiable'
    """
    return RulePair(f, types=types, kind="non_differentiable").resolved()


def no_derivative_rule_functions(f: Any) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The rrule and frule of a non-differentiable ``f``: ``NoTangent()`` for every input.

    Example:
        >>> reverse, forward = no_derivative_rule_functions(abs)
        >>> reverse(-2.0)[1](1.0), forward((None, 1.0), -2.0)
        ((NoTangent(), NoTangent()), (2.0, NoTangent()))
    """

    def no_derivative_rrule(*args: Any, **kwargs: Any) -> Any:
        y = f(*args, **kwargs)

        def no_derivative_pullback(ybar: Any) -> Any:
            return (NoTangent(),) * (1 + len(args))

        return y, no_derivative_pullback

    def no_derivative_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
        return f(*args, **kwargs), NoTangent()

    return no_derivative_rrule, no_derivative_frule


def non_differentiable(f: Any, *types: TypeSpec) -> None:
    """Declare ``f`` non-differentiable: its rules give ``NoTangent`` for every input (the
    entry ``RulePair(f, types=types, kind="non_differentiable")``, registered).

    Example:
        >>> import rulescore as rc
        >>> def sign_of(x): return 1 if x > 0 else -1
        >>> rc.non_differentiable(sign_of)
        >>> y, back = rc.rrule(sign_of, 2.0)
        >>> y, back(1.0)
        (1, (NoTangent(), NoTangent()))
    """
    register_rules(RulePair(f, types=types, kind="non_differentiable"))


def ignore_derivatives(x: Any) -> Any:
    """Return ``x`` unchanged, with no gradient flowing back through it.

    A zero-argument callable is called and its result returned (as in ChainRulesCore), so
    ``ignore_derivatives(lambda: log_state())`` runs code that is never differentiated.

    Example:
        >>> import rulescore as rc
        >>> rc.ignore_derivatives(3.0), rc.rrule(rc.ignore_derivatives, 3.0)[1](1.0)
        (3.0, (NoTangent(), NoTangent()))
    """
    if inspect.isfunction(x) or inspect.ismethod(x):
        return x()
    return x


def partials_scalar_form(pair: RulePair) -> Callable[..., Any]:
    """The scalar form (see :class:`~rulescore.RulePair`'s ``scalar``) an entry derives from its
    ``partials``: the primal and its partials at real scalars, computed as its pullback would
    (quietly, for an ``errstate`` entry returning a NumPy scalar).

    Example:
        >>> import math, rulescore as rc
        >>> form = partials_scalar_form(rc.RulePair(math.sin, partials=math.cos))
        >>> form.__name__, form(0.0)
        ('sin_scalar', (0.0, (1.0,)))
    """
    f, partials, errstate = pair.primal, pair.partials, pair.errstate
    assert partials is not None
    with_result = _wants(partials, "result")

    def scalar_form(*args: Any) -> Any:
        y = f(*args)
        if errstate and type(y) is np.float64:
            with np.errstate(divide="ignore"):
                d = partials(*args, result=y) if with_result else partials(*args)
        else:
            d = partials(*args, result=y) if with_result else partials(*args)
        return y, d if type(d) is tuple else (d,)

    def unary_scalar_form(x: Any, *rest: Any) -> Any:  # (one argument: the commonest, without packing)
        if rest:  # (an optional argument given: zeta(x, q))
            return scalar_form(x, *rest)
        d = partials(x)
        return f(x), d if type(d) is tuple else (d,)

    form = unary_scalar_form if not errstate and not with_result and _positional_count(partials) == 1 \
        else scalar_form
    form.__qualname__ = form.__name__ = f"{callable_name(f).rsplit('.', 1)[-1]}_scalar"
    return form



DERIVERS["partials"] = partials_rule_functions
SCALAR_DERIVERS["partials"] = partials_scalar_form
DERIVERS["kind"] = lambda pair: no_derivative_rule_functions(pair.primal)  # "non_differentiable"
