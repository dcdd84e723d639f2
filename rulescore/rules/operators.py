"""Rules for the ``operator`` module: the hottest rules of an engine (every ``a + b`` lands here).

Tables:

- :data:`RULES`: ``{operator.f: (rrule, frule)}`` written by hand for speed: no ``ProjectTo``
  object per call, zero cotangents returned early, Python floats stay Python floats.
- :data:`NON_DIFFERENTIABLE`: comparisons, ``floordiv``, ``not_``, ``truth``, ``is_``,
  ``contains``, bitwise operators.

Numbers (``int``, ``float``, ``complex``), NumPy scalars and arrays are supported, with
broadcasting (cotangents are summed back to each operand's shape and keep its dtype). ``+`` and
``*`` on lists and tuples (concatenation, repetition) get structural ``Tangent`` cotangents.
Complex numbers follow ChainRules: the pullback of a holomorphic operation multiplies by the
conjugate of the derivative; ``abs`` of a complex ``z`` gives ``z / |z| * real(ybar)``.

Conventions at the edges:

- ``x ** p``: ``d/dx`` at ``x == 0`` is its limit (``1`` for ``p == 1``, ``0`` for ``p == 0`` or
  ``p > 1``, ``inf`` for ``0 < p < 1``); ``d/dp`` is ``z * log(x)`` for ``x > 0``, ``0`` for
  ``x <= 0`` (where ``x ** p`` is real only at integer ``p``), and ``NoTangent()`` when ``p`` is
  an integer (a Python or NumPy int, or an integer array).
- ``abs`` has derivative ``0`` at ``0``; ``x % y`` has ``d/dy = -(x // y)``.

The module also holds the small helpers the other families share (:func:`proj`, :func:`fit`,
:func:`elementwise_rules`, the ``pow`` gradients).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore._helpers import non_differentiable
from rulescore._projection import project, unbroadcast
from rulescore._registry import frule, rrule
from rulescore._tangent import Tangent, tangent_type
from rulescore._thunks import Thunk
from rulescore._zeros import AbstractZero, NoTangent, ZeroTangent

_NT = NoTangent()
_ZT = ZeroTangent()
_Z1 = (_NT, _ZT)
_Z2 = (_NT, _ZT, _ZT)
_SEQ = (list, tuple)
#: ``Tangent[tuple]`` (the cotangent of the tuple output of ``divmod``, ``frexp``, ``modf``).
TupleTangent = tangent_type(tuple)


# ---------------------------------------------------------------------------------------------
# Shared helpers (used by the math, builtins and ufuncs families too)
# ---------------------------------------------------------------------------------------------


def ct(t: Any) -> Any:
    """The value of an incoming tangent, or ``None`` when it is a zero (after unthunking)."""
    tt = type(t)
    if tt is np.ndarray or tt is float:
        return t
    if isinstance(t, Thunk):
        t = t.unthunk()
    if t is None or isinstance(t, AbstractZero):
        return None
    return t


def proj(x: Any, dx: Any) -> Any:
    """``rc.project(x, dx)``, also summing ``dx`` when a scalar ``x`` was broadcast to an array.

    Example:
        >>> import numpy as np
        >>> proj(1.0, np.ones(3)), proj(np.zeros(2, np.float32), np.ones((3, 2))).dtype
        (3.0, dtype('float32'))
    """
    tx = type(x)
    if tx is float:
        tdx = type(dx)
        if tdx is float:
            return dx
        if tdx is np.float64:  # what NumPy functions of a Python float return
            return float(dx)
    elif tx is np.ndarray:
        out = project(x, dx)
        if x.ndim == 0 and isinstance(out, np.generic):  # unbroadcast to () gives a NumPy scalar
            out = np.asarray(out)
        return out
    elif (tx is list or tx is tuple) and isinstance(dx, np.ndarray):  # a list given to NumPy
        shape = np.shape(x)
        return _nested(x, unbroadcast(dx, shape) if dx.shape != shape else dx)
    if getattr(dx, "ndim", 0) != 0 and not isinstance(x, (np.ndarray, list, tuple)):
        dx = np.sum(dx)
    return project(x, dx)


_ZERO_BYTES = bytes(64)


def stand_in(x: Any) -> Any:
    """What a pullback keeps of an argument it only projects onto.

    An array becomes a read-only array of the same shape and dtype over 64 zero bytes (every
    stride 0), so the argument itself can be freed before the backward pass; anything else is
    kept as it is.

    Example:
        >>> import numpy as np
        >>> s = stand_in(np.ones((1000, 1000)))
        >>> s.shape, s.dtype, s.strides, len(s.base)
        ((1000, 1000), dtype('float64'), (0, 0), 64)
    """
    if type(x) is np.ndarray:
        key = (x.shape, x.dtype)
        standin = _STAND_INS.get(key)
        if standin is not None:
            return standin
        if x.dtype.itemsize <= 64 and x.dtype.kind in "fciub":
            if len(_STAND_INS) >= _MAX_STAND_INS:
                _STAND_INS.clear()
            standin = _STAND_INS[key] = np.ndarray(x.shape, x.dtype, _ZERO_BYTES, 0, (0,) * x.ndim)
            return standin
    return x


#: Stand-ins are read-only and carry nothing but a shape and a dtype: one per (shape, dtype) is
#: shared (a bounded cache; it is emptied when full).
_STAND_INS: dict[tuple[Any, ...], np.ndarray] = {}
_MAX_STAND_INS = 512


def _nested(x: Any, dx: Any) -> Any:
    """The structural cotangent of a (nested) list or tuple of numbers from an array."""
    if type(x) is list or type(x) is tuple:
        return tangent_type(type(x))(*(_nested(v, d) for v, d in zip(x, dx, strict=True)))
    return proj(x, dx)


def as_array_tangent(t: Any) -> Any:
    """The tangent of a (nested) list or tuple given to NumPy, as an array (zeros as 0.0)."""
    if isinstance(t, Tangent) and isinstance(t.backing, tuple):
        return np.asarray([as_array_tangent(v) for v in t.backing])
    if type(t) is list or type(t) is tuple:
        return np.asarray([as_array_tangent(v) for v in t])
    if t is None or isinstance(t, AbstractZero):
        return 0.0
    return t


def fit(y: Any, ydot: Any) -> Any:
    """Put a forward tangent into the tangent space of the output ``y`` (broadcast, dtype).

    Example:
        >>> import numpy as np
        >>> fit(np.zeros((2, 2)), 1.0)
        array([[1., 1.],
               [1., 1.]])
    """
    if ydot is None or isinstance(ydot, AbstractZero):
        return _ZT
    ty = type(y)
    if ty is float:
        tdot = type(ydot)
        if tdot is float:
            return ydot
        if tdot is np.float64:
            return float(ydot)
    elif ty is np.ndarray:
        if type(ydot) is np.ndarray and ydot.shape == y.shape and ydot.dtype == y.dtype:
            return ydot
        if getattr(ydot, "shape", ()) != y.shape:
            ydot = ydot + np.zeros(y.shape, dtype=y.dtype)
        return project(y, ydot)
    if getattr(ydot, "ndim", 0) != 0 and not isinstance(y, np.ndarray):
        ydot = np.sum(ydot)
    return project(y, ydot)


def conj(v: Any) -> Any:
    """Complex conjugate; real values (Python or NumPy, traced or not) are returned as they are."""
    t = type(v)
    if t is float or t is int:
        return v
    dt = getattr(v, "dtype", None)
    if dt is not None:
        return np.conj(v) if dt.kind == "c" else v
    if isinstance(v, complex):
        return v.conjugate()
    return v


def is_complex(v: Any) -> bool:
    """Whether ``v`` is a complex number or a complex array."""
    if isinstance(v, complex):
        return True
    dt = getattr(v, "dtype", None)
    return dt is not None and dt.kind == "c"


def add_dots(a: Any, b: Any) -> Any:
    """Sum of two forward tangents, either of which may be ``None`` (zero)."""
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def entries(t: Any, n: int) -> list[Any]:
    """The ``n`` entries of a structural (tuple/list) tangent, zeros as ``None``."""
    t = ct(t)
    if t is None:
        return [None] * n
    if isinstance(t, Tangent):
        items = list(t.backing) if isinstance(t.backing, tuple) else [t[i] for i in range(n)]
    else:
        items = list(t)
    return [ct(v) for v in items]


def spread(xs: Any, ybar: Any) -> Any:
    """Cotangent of the iterable ``xs`` for ``y = sum(xs)``: ``ybar`` in every entry.

    Lists and tuples get ``Tangent[list]`` / ``Tangent[tuple]``; an array (summed along its first
    axis) an array; an iterable that cannot hold a tangent (a generator, a range) ``NoTangent``.
    """
    if type(xs) is list or type(xs) is tuple:
        return tangent_type(type(xs))(*(proj(v, ybar) for v in xs))
    if isinstance(xs, np.ndarray):
        return fit(xs, ybar)
    if isinstance(xs, (list, tuple)):
        return project(xs, [proj(v, ybar) for v in xs])
    return _NT


def sum_dots(xs: Any, xsdot: Any) -> Any:
    """Forward tangent of ``sum(xs)`` given the tangent of ``xs`` (``None`` for zero)."""
    xsdot = ct(xsdot)
    if xsdot is None:
        return None
    if isinstance(xs, np.ndarray):
        return np.sum(xsdot, axis=0)
    total = None
    for v in entries(xsdot, len(xs)):
        total = add_dots(total, v)
    return total


def _named(fn: Any, name: str) -> Any:
    fn.__name__ = fn.__qualname__ = name
    return fn


class FromResult:
    """Partials computed from the result alone (``exp``, ``tanh``, ``sqrt``, ``+``): given to
    :func:`elementwise_rules`, the pullback keeps only the inputs' shapes and dtypes
    (:func:`stand_in`), so the inputs can be freed before the backward pass.

    Example:
        >>> FromResult(lambda result: 1 - result * result)(0.3, result=0.5)
        0.75
    """

    __slots__ = ("of_result",)

    def __init__(self, of_result: Callable[[Any], Any]) -> None:
        self.of_result = of_result

    def __call__(self, *args: Any, result: Any) -> Any:
        return self.of_result(result)


#: Sentinel partials understood by :func:`elementwise_rules`: the identity and its negation.
ONE: Any = object()
MINUS_ONE: Any = object()


def _times_conj(ybar: Any, d: Any) -> Any:
    if d is ONE:
        return ybar
    if d is MINUS_ONE:
        return -ybar
    if d is None:
        return _ZT
    if isinstance(d, AbstractZero):
        return d
    return ybar * conj(d)


def _float_cotangents(ybar: float, ds: tuple[Any, ...]) -> list[Any]:
    """``ybar * d`` for each partial ``d`` of a function of real floats, as floats."""
    out: list[Any] = []
    for d in ds:
        td = type(d)
        if td is float:
            out.append(ybar * d)
        elif d is ONE:
            out.append(ybar)
        elif d is MINUS_ONE:
            out.append(-ybar)
        elif d is None:
            out.append(_ZT)
        elif isinstance(d, AbstractZero):
            out.append(d)
        else:
            out.append(proj(1.0, ybar * conj(d)))
    return out


def _times(d: Any, xdot: Any) -> Any:
    if d is ONE:
        return xdot
    if d is MINUS_ONE:
        return -xdot
    if d is None or isinstance(d, AbstractZero):
        return None
    return d * xdot


def _all_of_type(args: tuple[Any, ...], t: type) -> bool:
    for a in args:
        if type(a) is not t:
            return False
    return True


def elementwise_rules(
    f: Any,
    partials: Callable[..., Any],
    *,
    name: str | None = None,
    check_kwargs: Callable[[Any, dict[str, Any]], Any] | None = None,
    errstate: bool = False,
) -> None:
    """Register the rrule and frule of an element-wise ``f`` from ``partials(*args, result=y)``.

    ``partials`` returns one partial derivative per argument (a tuple, or a bare value for one
    argument): a number or array, :data:`ONE`/:data:`MINUS_ONE`, ``None`` for a zero derivative,
    or ``NoTangent()`` for an argument with no tangent space; wrapped in :class:`FromResult` when
    they depend on the result only. Pullbacks multiply by the conjugate
    (holomorphic convention) and project onto each argument, summing broadcast dimensions.
    ``check_kwargs(f, kwargs)`` validates keyword arguments and returns a ``where`` mask (or
    ``None``): cotangents and tangents are zero where the mask is ``False``. With ``errstate``,
    partials are evaluated with division-by-zero warnings off (an infinite derivative such as
    that of ``sqrt`` at ``0`` is the true limit, not an error).
    """
    label = name or getattr(f, "__name__", "f")

    def _partials(args: tuple[Any, ...], y: Any, where: Any) -> tuple[Any, ...]:
        if where is not None:
            with np.errstate(divide="ignore", invalid="ignore"):
                ds = partials(*args, result=y)
        elif errstate:
            with np.errstate(divide="ignore"):
                ds = partials(*args, result=y)
        else:
            ds = partials(*args, result=y)
        return ds if isinstance(ds, tuple) else (ds,)

    pullback_name = f"{label}_pullback"
    keeps_inputs = not isinstance(partials, FromResult)

    def elementwise_rrule(*args: Any, **kwargs: Any) -> Any:
        where = check_kwargs(f, kwargs) if kwargs and check_kwargs is not None else None
        y = f(*args, **kwargs)
        if not keeps_inputs:
            args = tuple([stand_in(a) for a in args])

        def elementwise_pullback(ybar: Any) -> Any:
            if type(ybar) is float and float_inputs:  # the scalar hot path: real floats throughout
                ds = partials(*args, result=y)
                if type(ds) is float:
                    return (_NT, ybar * ds)
                return (_NT, *_float_cotangents(ybar, ds if type(ds) is tuple else (ds,)))
            ybar = ct(ybar)
            if ybar is None:
                return (_NT, *(_ZT for _ in args))
            ds = _partials(args if array_inputs else as_arrays(args), y, where)
            out = []
            for a, d in zip(args, ds, strict=True):
                g = _times_conj(ybar, d)
                if isinstance(g, AbstractZero):
                    out.append(g)
                    continue
                if where is not None:
                    g = np.where(where, g, 0)
                out.append(proj(a, g))
            return (_NT, *out)

        if type(y) is float:
            float_inputs, array_inputs = where is None and _all_of_type(args, float), False
        else:
            float_inputs, array_inputs = False, _all_of_type(args, np.ndarray)  # no lists to convert
        elementwise_pullback.__qualname__ = elementwise_pullback.__name__ = pullback_name
        return y, elementwise_pullback

    def elementwise_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
        where = check_kwargs(f, kwargs) if check_kwargs is not None else None
        y = f(*args, **kwargs)
        dots = [ct(t) for t in tangents[1:]]
        if all(t is None for t in dots):
            return y, _ZT
        dots = [as_array_tangent(t) if type(a) is list or type(a) is tuple else t
                for a, t in zip(args, dots, strict=True)]
        ds = _partials(as_arrays(args), y, where)
        ydot = None
        for d, xdot in zip(ds, dots, strict=True):
            if xdot is not None:
                ydot = add_dots(ydot, _times(d, xdot))
        if ydot is None:
            return y, _ZT
        if where is not None:
            ydot = np.where(where, ydot, 0)
        return y, fit(y, ydot)

    _named(elementwise_rrule, f"{label}_rrule")
    _named(elementwise_frule, f"{label}_frule")
    rrule.register(f)(elementwise_rrule)
    frule.register(f)(elementwise_frule)


def as_arrays(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """Lists and tuples given to a NumPy function become arrays (for computing partials)."""
    for a in args:
        if type(a) is list or type(a) is tuple:
            return tuple(np.asarray(v) if type(v) is list or type(v) is tuple else v for v in args)
    return args


# ---------------------------------------------------------------------------------------------
# pow gradients (shared with builtins.pow, math.pow, numpy.power and numpy.float_power)
# ---------------------------------------------------------------------------------------------


def is_int_like(p: Any) -> bool:
    """An integer exponent (Python/NumPy int or integer array): it has no tangent space here."""
    if isinstance(p, (int, np.integer)):
        return True
    dt = getattr(p, "dtype", None)
    return dt is not None and dt.kind in "iub"


def _pow_dx_at_zero(p: Any) -> Any:
    """Limit of ``p * x ** (p - 1)`` as ``x -> 0`` from above."""
    pr = p.real
    if pr == 1:
        return 1.0
    if pr > 1 or pr == 0:
        return 0.0
    return np.inf


def pow_grad_x(x: Any, p: Any, z: Any) -> Any:
    """``d(x ** p)/dx``, finite limits at ``x == 0`` (see the module documentation)."""
    if not isinstance(x, np.ndarray) and not isinstance(p, np.ndarray):
        if x != 0:
            if isinstance(x, np.integer):
                x = x * 1.0
            return p * x ** (p - 1)
        return _pow_dx_at_zero(p)
    if getattr(x, "dtype", None) is not None and x.dtype.kind in "iub":
        x = x * 1.0
    elif isinstance(x, (int, np.integer)):
        x = x * 1.0
    if type(p) in (int, float) and p == 2:
        return 2 * x  # the common square: one pass instead of a power and a product
    with np.errstate(divide="ignore", invalid="ignore"):
        d = p * x ** (p - 1)
        if isinstance(p, np.ndarray) or p == 0:
            d = np.where((x == 0) & (p == 0), 0.0, d)
    return d


def pow_grad_p(x: Any, p: Any, z: Any) -> Any:
    """``d(x ** p)/dp``: ``z * log(x)``; ``0`` where ``x <= 0`` for real ``x`` and real ``z``."""
    if not isinstance(x, np.ndarray) and not isinstance(p, np.ndarray) and not isinstance(z, np.ndarray):
        if is_complex(x):
            return z * np.log(x) if x != 0 else 0.0 * z
        if x > 0:
            return z * np.log(x)
        if is_complex(z):  # Python's (-2.0) ** 0.5 is complex: use the principal complex log
            return z * np.log(x + 0j) if x != 0 else 0.0 * z
        return 0.0 * z
    with np.errstate(divide="ignore", invalid="ignore"):
        if is_complex(x):
            nz = x != 0
            return np.where(nz, z * np.log(np.where(nz, x, 1)), 0)
        pos = x > 0
        return np.where(pos, z * np.log(np.where(pos, x, 1)), 0)


# ---------------------------------------------------------------------------------------------
# Sequences: + (concatenation) and * (repetition)
# ---------------------------------------------------------------------------------------------


def _seq_tangent(x: Any, items: list[Any]) -> Any:
    if not isinstance(x, _SEQ):
        return _NT
    return tangent_type(type(x))(*(_ZT if v is None else v for v in items))


def _concat_rules(x: Any, y: Any, z: Any) -> Any:
    nx = len(x)

    def concat_pullback(zbar: Any) -> Any:
        if ct(zbar) is None:
            return _Z2
        parts = entries(zbar, len(z))
        return _NT, _seq_tangent(x, parts[:nx]), _seq_tangent(y, parts[nx:])

    return z, concat_pullback


def _concat_dot(x: Any, y: Any, z: Any, xdot: Any, ydot: Any) -> Any:
    if ct(xdot) is None and ct(ydot) is None:
        return _ZT
    return _seq_tangent(z, entries(xdot, len(x)) + entries(ydot, len(y)))


def _repeat_rules(x: Any, y: Any, z: Any) -> Any:
    seq_first = isinstance(x, _SEQ)
    seq = x if seq_first else y
    n = len(seq)

    def repeat_pullback(zbar: Any) -> Any:
        if ct(zbar) is None or n == 0:
            return _Z2
        parts = entries(zbar, len(z))
        sums: list[Any] = []
        for i in range(n):
            acc = None
            for v in parts[i::n]:
                acc = add_dots(acc, v)
            sums.append(acc)
        bar = _seq_tangent(seq, sums)
        return (_NT, bar, _NT) if seq_first else (_NT, _NT, bar)

    return z, repeat_pullback


# ---------------------------------------------------------------------------------------------
# The rules
# ---------------------------------------------------------------------------------------------


def add_rrule(x: Any, y: Any) -> Any:
    z = x + y
    if type(x) is float and type(y) is float:  # the scalar hot path: no projection needed
        return z, _float_add_pullback
    if type(z) in _SEQ:
        return _concat_rules(x, y, z)
    x, y = stand_in(x), stand_in(y)

    def add_pullback(zbar: Any) -> Any:
        zbar = ct(zbar)
        if zbar is None:
            return _Z2
        return _NT, proj(x, zbar), proj(y, zbar)

    return z, add_pullback


def add_frule(tangents: Any, x: Any, y: Any) -> Any:
    _, xdot, ydot = tangents
    z = x + y
    if type(z) in _SEQ:
        return z, _concat_dot(x, y, z, xdot, ydot)
    return z, fit(z, add_dots(ct(xdot), ct(ydot)))


def sub_rrule(x: Any, y: Any) -> Any:
    def sub_pullback(zbar: Any) -> Any:
        zbar = ct(zbar)
        if zbar is None:
            return _Z2
        if type(zbar) is np.ndarray:  # lazy: y is often a constant (data, targets)
            return _NT, proj(x, zbar), Thunk(lambda: proj(y, -zbar))
        return _NT, proj(x, zbar), proj(y, -zbar)

    z = x - y
    x, y = stand_in(x), stand_in(y)
    return z, sub_pullback


def sub_frule(tangents: Any, x: Any, y: Any) -> Any:
    _, xdot, ydot = tangents
    xdot, ydot = ct(xdot), ct(ydot)
    z = x - y
    if ydot is None:
        return z, fit(z, xdot)
    return z, fit(z, -ydot if xdot is None else xdot - ydot)


def _float_add_pullback(zbar: Any) -> Any:
    if type(zbar) is float:
        return _NT, zbar, zbar
    zbar = ct(zbar)
    return _Z2 if zbar is None else (_NT, proj(1.0, zbar), proj(1.0, zbar))


def mul_rrule(x: Any, y: Any) -> Any:
    z = x * y
    if type(x) is float and type(y) is float:  # the scalar hot path: no projection needed

        def float_mul_pullback(zbar: Any) -> Any:
            if type(zbar) is float:
                return _NT, zbar * y, zbar * x
            zbar = ct(zbar)
            return _Z2 if zbar is None else (_NT, proj(x, zbar * y), proj(y, x * zbar))

        return z, float_mul_pullback
    if type(z) in _SEQ:
        return _repeat_rules(x, y, z)

    def mul_pullback(zbar: Any) -> Any:
        zbar = ct(zbar)
        if zbar is None:
            return _Z2
        return _NT, proj(x, zbar * conj(y)), proj(y, conj(x) * zbar)

    return z, mul_pullback


def mul_frule(tangents: Any, x: Any, y: Any) -> Any:
    _, xdot, ydot = tangents
    z = x * y
    if type(z) in _SEQ:
        seq_first = isinstance(x, _SEQ)
        n = len(y) if not seq_first else len(x)
        reps = len(z) // n if n else 0
        dot = xdot if seq_first else ydot
        if ct(dot) is None:
            return z, _ZT
        return z, _seq_tangent(z, entries(dot, n) * reps)
    xdot, ydot = ct(xdot), ct(ydot)
    zdot = add_dots(None if xdot is None else xdot * y, None if ydot is None else x * ydot)
    return z, fit(z, zdot)


def truediv_rrule(x: Any, y: Any) -> Any:
    z = x / y

    def truediv_pullback(zbar: Any) -> Any:
        zbar = ct(zbar)
        if zbar is None:
            return _Z2
        xbar = zbar / conj(y)
        if type(y) is not float:  # lazy: dividing by a constant (a count, an array of data) is common
            return _NT, proj(x, xbar), Thunk(lambda: proj(y, -xbar * conj(z)))
        return _NT, proj(x, xbar), proj(y, -xbar * conj(z))

    return z, truediv_pullback


def truediv_frule(tangents: Any, x: Any, y: Any) -> Any:
    _, xdot, ydot = tangents
    xdot, ydot = ct(xdot), ct(ydot)
    z = x / y
    if ydot is None:
        return z, fit(z, None if xdot is None else xdot / y)
    num = -z * ydot if xdot is None else xdot - z * ydot
    return z, fit(z, num / y)


def mod_rrule(x: Any, y: Any) -> Any:
    z = x % y
    if isinstance(z, str):  # string formatting: no derivative
        return z, _named(lambda zbar: _Z2, "mod_pullback")

    def mod_pullback(zbar: Any) -> Any:
        zbar = ct(zbar)
        if zbar is None:
            return _Z2
        return _NT, proj(x, zbar), proj(y, -zbar * (x // y))

    return z, mod_pullback


def mod_frule(tangents: Any, x: Any, y: Any) -> Any:
    _, xdot, ydot = tangents
    z = x % y
    if isinstance(z, str):
        return z, _NT
    xdot, ydot = ct(xdot), ct(ydot)
    return z, fit(z, add_dots(xdot, None if ydot is None else -(x // y) * ydot))


def pow_rrule(x: Any, p: Any) -> Any:
    z = x ** p
    int_p = is_int_like(p)
    square = type(p) is int and p == 2 and type(x) is np.ndarray and x.dtype.kind == "f"

    def pow_pullback(zbar: Any) -> Any:
        zbar = ct(zbar)
        if zbar is None:
            return _Z2
        if square and type(zbar) is np.ndarray and not any(zbar.strides) and zbar.size:
            # the cotangent of a sum is one number broadcast: (2 * ybar) * x is one pass, not two
            xbar = proj(x, (2 * zbar.reshape(-1)[0]) * x)
        else:
            xbar = proj(x, zbar * conj(pow_grad_x(x, p, z)))
        if int_p:
            return _NT, xbar, _NT
        return _NT, xbar, proj(p, zbar * conj(pow_grad_p(x, p, z)))

    return z, pow_pullback


def pow_frule(tangents: Any, x: Any, p: Any) -> Any:
    _, xdot, pdot = tangents
    xdot, pdot = ct(xdot), ct(pdot)
    z = x ** p
    zdot = None if xdot is None else pow_grad_x(x, p, z) * xdot
    if pdot is not None and not is_int_like(p):
        zdot = add_dots(zdot, pow_grad_p(x, p, z) * pdot)
    return z, fit(z, zdot)


def neg_rrule(x: Any) -> Any:
    def neg_pullback(zbar: Any) -> Any:
        zbar = ct(zbar)
        if zbar is None:
            return _Z1
        return _NT, proj(x, -zbar)

    return -x, neg_pullback


def neg_frule(tangents: Any, x: Any) -> Any:
    z = -x
    xdot = ct(tangents[1])
    return z, fit(z, None if xdot is None else -xdot)


def pos_rrule(x: Any) -> Any:
    def pos_pullback(zbar: Any) -> Any:
        zbar = ct(zbar)
        if zbar is None:
            return _Z1
        return _NT, proj(x, zbar)

    return +x, pos_pullback


def pos_frule(tangents: Any, x: Any) -> Any:
    z = +x
    return z, fit(z, ct(tangents[1]))


def abs_grad(x: Any, y: Any, ybar: Any) -> Any:
    """Cotangent of ``x`` for ``y = abs(x)``: ``sign(x) * ybar``, ``x / |x| * real(ybar)`` for
    complex ``x`` (``0`` at ``0``)."""
    tx = type(x)
    if tx is float or tx is int:
        if x > 0:
            return ybar
        return -ybar if x < 0 else 0.0 * ybar
    if is_complex(x):
        if isinstance(x, np.ndarray):
            nz = y != 0
            return np.where(nz, x / np.where(nz, y, 1), 0) * np.real(ybar)
        return x / y * np.real(ybar) if y != 0 else 0.0 * x * np.real(ybar)
    return np.sign(x) * ybar


def abs_dot(x: Any, y: Any, xdot: Any) -> Any:
    """Tangent of ``abs(x)``: ``sign(x) * xdot``; ``real(conj(x) * xdot) / |x|`` for complex."""
    tx = type(x)
    if tx is float or tx is int:
        if x > 0:
            return xdot
        return -xdot if x < 0 else 0.0 * xdot
    if is_complex(x):
        num = np.real(np.conj(x) * xdot)
        if isinstance(x, np.ndarray) or isinstance(num, np.ndarray):
            nz = y != 0
            return np.where(nz, num / np.where(nz, y, 1), 0)
        return num / y if y != 0 else 0.0 * num
    return np.sign(x) * xdot


def abs_rrule(x: Any) -> Any:
    y = abs(x)

    def abs_pullback(ybar: Any) -> Any:
        ybar = ct(ybar)
        if ybar is None:
            return _Z1
        return _NT, proj(x, abs_grad(x, y, ybar))

    return y, abs_pullback


def abs_frule(tangents: Any, x: Any) -> Any:
    y = abs(x)
    xdot = ct(tangents[1])
    return y, fit(y, None if xdot is None else abs_dot(x, y, xdot))


def _conj_t(a: Any) -> Any:
    return np.swapaxes(conj(a), -1, -2)


def matmul_grad(x: Any, y: Any, zbar: Any, wrt: int) -> Any:
    """The unprojected cotangent of ``x @ y`` for operand ``wrt`` (0: x, 1: y), any ranks."""
    xd = x.ndim if type(x) is np.ndarray else np.ndim(x)
    yd = y.ndim if type(y) is np.ndarray else np.ndim(y)
    if xd == 2 and yd == 2:
        if wrt == 0 and type(zbar) is np.ndarray and zbar.strides[0] == 0 and zbar.shape[0] > 1:
            # a cotangent broadcast along its rows (the pullback of a sum): one row suffices
            return np.broadcast_to(zbar[0] @ _conj_t(y), (zbar.shape[0], np.shape(y)[0]))
        other = y if wrt == 0 else x
        if type(other) is np.ndarray and other.dtype.kind != "c":
            return zbar @ other.T if wrt == 0 else other.T @ zbar  # real matrices: no conjugate
        return zbar @ _conj_t(y) if wrt == 0 else _conj_t(x) @ zbar
    if xd == 1 and yd == 1:
        return zbar * conj(y) if wrt == 0 else conj(x) * zbar
    g = zbar
    if xd == 1:
        g = np.expand_dims(g, -2)
    if yd == 1:
        g = np.expand_dims(g, -1)
    if wrt == 0:
        dx = g @ _conj_t(np.expand_dims(y, -1) if yd == 1 else y)
        return np.squeeze(dx, axis=-2) if xd == 1 else dx
    dy = _conj_t(np.expand_dims(x, 0) if xd == 1 else x) @ g
    return np.squeeze(dy, axis=-1) if yd == 1 else dy


def matmul_rrule(x: Any, y: Any) -> Any:
    z = x @ y

    def matmul_pullback(zbar: Any) -> Any:
        zbar = ct(zbar)
        if zbar is None:
            return _Z2
        # thunks: an engine that needs only one operand's cotangent pays for one product
        return (_NT, Thunk(lambda: proj(x, matmul_grad(x, y, zbar, 0))),
                Thunk(lambda: proj(y, matmul_grad(x, y, zbar, 1))))

    return z, matmul_pullback


def matmul_frule(tangents: Any, x: Any, y: Any) -> Any:
    _, xdot, ydot = tangents
    xdot, ydot = ct(xdot), ct(ydot)
    z = x @ y
    return z, fit(z, add_dots(None if xdot is None else xdot @ y, None if ydot is None else x @ ydot))


#: ``{operator function: (rrule, frule)}``; registered for every argument type.
RULES: dict[Any, tuple[Callable[..., Any], Callable[..., Any]]] = {
    operator.add: (add_rrule, add_frule),
    operator.concat: (add_rrule, add_frule),
    operator.sub: (sub_rrule, sub_frule),
    operator.mul: (mul_rrule, mul_frule),
    operator.truediv: (truediv_rrule, truediv_frule),
    operator.mod: (mod_rrule, mod_frule),
    operator.pow: (pow_rrule, pow_frule),
    operator.neg: (neg_rrule, neg_frule),
    operator.pos: (pos_rrule, pos_frule),
    operator.abs: (abs_rrule, abs_frule),
    operator.matmul: (matmul_rrule, matmul_frule),
}

#: Operators whose result carries no derivative (booleans, integers, identity).
NON_DIFFERENTIABLE: tuple[Any, ...] = (
    operator.floordiv, operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge,
    operator.not_, operator.truth, operator.is_, operator.is_not, operator.contains,
    operator.and_, operator.or_, operator.xor, operator.invert, operator.lshift, operator.rshift,
    operator.index, operator.countOf, operator.indexOf,
)

for _f, (_r, _fr) in RULES.items():
    rrule.register(_f)(_r)
    frule.register(_f)(_fr)
for _f in NON_DIFFERENTIABLE:
    non_differentiable(_f)
