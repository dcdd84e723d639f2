"""Rules for products that contract axes: ``matmul``, ``dot``, ``inner``, ``outer``, ``vdot``,
``vecdot``, ``matvec``, ``vecmat``, ``tensordot`` and ``einsum``, under all their aliases.

One table, :data:`RULES`. Aliases share one rule: ``a @ b`` (``operator.matmul``), ``np.matmul``
and ``np.linalg.matmul``; ``np.dot`` and ``ndarray.dot``; ``np.outer`` and ``np.linalg.outer``;
``np.vecdot`` and ``np.linalg.vecdot``; ``np.tensordot`` and ``np.linalg.tensordot``.

Every function here is linear in each operand, so each frule is the product rule (one term per
operand with a non-zero tangent), and each pullback contracts the cotangent with the other
operand, conjugated (holomorphic convention; ``vdot`` and ``vecdot`` conjugate their first
operand, so its cotangent is ``conj(ybar) * other``). Cotangents are summed back over broadcast
dimensions and keep each operand's dtype; a list given to NumPy gets a structural cotangent.
The generalised ufuncs (``np.matmul``, ``np.vecdot``, ``np.matvec``, ``np.vecmat``) refuse
``out=``, ``axes=``, ``axis=`` and ``keepdims=`` with a ``TypeError`` naming the ufunc.

``matmul``'s pullback returns thunks (an engine that needs one operand's cotangent pays for one
product) and, for real 2-D operands, multiplies by the transpose with no conjugate.
"""

from __future__ import annotations

import functools
import operator
import string
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from rulescore import RulePair
from rulescore._arithmetic import is_zero
from rulescore._namespace import constant_like, foreign_namespace, is_complex_array, unbroadcast_to
from rulescore._thunks import Thunk
from rulescore._zeros import NoTangent
from rulescore.rules._common import as_arrays, check_kwargs, conj, product_tangent, proj

_NT = NoTangent()


# -- matmul ---------------------------------------------------------------------------------------


def _conj_t(a: Any, xp: Any = np) -> Any:
    if xp is np:  # (a NumPy array or an engine's value of one: its dtype, read without a traced call)
        return np.swapaxes(a if a.dtype.kind != "c" else conj(a), -1, -2)
    return xp.matrix_transpose(xp.conj(a) if is_complex_array(xp, a) else a)


def _xp_conj(a: Any, xp: Any) -> Any:
    if xp is np:
        return a if type(a) is np.ndarray and a.dtype.kind != "c" else conj(a)  # real: no call
    return xp.conj(a) if is_complex_array(xp, a) else a


def matmul_grad(x: Any, y: Any, zbar: Any, wrt: int, xp: Any = np) -> Any:
    """The unprojected cotangent of ``x @ y`` for operand ``wrt`` (0: x, 1: y), any ranks,
    computed in the array namespace ``xp`` (NumPy, or the operands' own: the native tier).

    Example:
        >>> import numpy as np
        >>> matmul_grad(np.ones((2, 3)), np.ones((3, 4)), np.ones((2, 4)), 0)
        array([[4., 4., 4.],
               [4., 4., 4.]])
    """
    xd = x.ndim if type(x) is np.ndarray else np.ndim(x)
    yd = y.ndim if type(y) is np.ndarray else np.ndim(y)
    if xd == 2 and yd == 2:
        if wrt == 0 and type(zbar) is np.ndarray and zbar.strides[0] == 0 and zbar.shape[0] > 1:
            # a cotangent broadcast along its rows (the pullback of a sum): one row suffices
            return np.broadcast_to(zbar[0] @ _conj_t(y), (zbar.shape[0], np.shape(y)[0]))
        other = y if wrt == 0 else x
        if type(other) is np.ndarray and other.dtype.kind != "c":
            return zbar @ other.T if wrt == 0 else other.T @ zbar  # real matrices: no conjugate
        return zbar @ _conj_t(y, xp) if wrt == 0 else _conj_t(x, xp) @ zbar
    if xd == 1 and yd == 1:
        other = y if wrt == 0 else x  # (an array, or an engine's value of one: its dtype read untraced)
        other = other if xp is np and other.dtype.kind != "c" else _xp_conj(other, xp)
        return zbar * other if wrt == 0 else other * zbar
    if xd + yd == 3:
        other = y if wrt == 0 else x
        if xp is np and other.ndim == 2 and other.dtype.kind != "c":
            # a real matrix (or an engine's value of one) and a vector, the vector's cotangent: one
            # product (the same BLAS gemv as the general lines' expand_dims, swapaxes, @ and
            # squeeze, four calls to trace at a nested level)
            return zbar @ other.T if wrt == 0 else other.T @ zbar
    g = zbar
    if xd == 1:
        g = xp.expand_dims(g, axis=-2)
    if yd == 1:
        g = xp.expand_dims(g, axis=-1)
    if wrt == 0:
        dx = g @ _conj_t(xp.expand_dims(y, axis=-1) if yd == 1 else y, xp)
        return xp.squeeze(dx, axis=-2) if xd == 1 else dx
    dy = _conj_t(xp.expand_dims(x, axis=0) if xd == 1 else x, xp) @ g
    return xp.squeeze(dy, axis=-1) if yd == 1 else dy


def _matmul_pullback_of(x: Any, y: Any) -> Callable[[Any], Any]:
    if type(x) is not np.ndarray:
        if (xp := foreign_namespace((x, y))) is not None:
            def native_matmul_pullback(zbar: Any) -> Any:
                return (_NT, unbroadcast_to(xp, x, matmul_grad(x, y, zbar, 0, xp)),
                        unbroadcast_to(xp, y, matmul_grad(x, y, zbar, 1, xp)))

            return native_matmul_pullback
    elif type(y) is np.ndarray and x.dtype.kind != "c" and y.dtype.kind != "c":
        if x.ndim == 2 and y.ndim == 2:
            return _real_matrices_pullback_of(x, y)
        if x.ndim + y.ndim <= 3:
            return _real_vector_pullback_of(x, y)
    xa, ya = as_arrays((x, y))

    def matmul_pullback(zbar: Any) -> Any:
        # thunks: an engine that needs only one operand's cotangent pays for one product
        return (_NT, Thunk(lambda: proj(x, matmul_grad(xa, ya, zbar, 0))),
                Thunk(lambda: proj(y, matmul_grad(xa, ya, zbar, 1))))

    return matmul_pullback


def _real_matrices_pullback_of(x: np.ndarray, y: np.ndarray) -> Callable[[Any], Any]:
    """``matmul``'s pullback for two real matrices (a dense layer): each thunk is one product
    with the other operand's transpose (what :func:`matmul_grad` computes for them, without its
    tests of ranks and dtypes on every call)."""

    def matmul_pullback(zbar: Any) -> Any:
        if type(zbar) is np.ndarray and zbar.strides[0] == 0 and zbar.shape[0] > 1:
            # broadcast along its rows (the pullback of a sum): matmul_grad's one-row product
            return (_NT, Thunk(lambda: proj(x, matmul_grad(x, y, zbar, 0))),
                    Thunk(lambda: proj(y, x.T @ zbar)))
        return _NT, Thunk(lambda: proj(x, zbar @ y.T)), Thunk(lambda: proj(y, x.T @ zbar))

    return matmul_pullback


def _real_vector_pullback_of(x: np.ndarray, y: np.ndarray) -> Callable[[Any], Any]:
    """``matmul``'s pullback for real arrays of which one or both are vectors (``v @ w``, ``A @
    v``, ``v @ A``): each thunk is what :func:`matmul_grad` computes for them (a product, or a
    product with the matrix's transpose), chosen here once instead of by its tests of ranks and
    dtypes on every call (each a traced call at a nested level); the outer product of ``A @ v``'s
    and ``v @ A``'s matrix cotangent is matmul_grad's."""
    if x.ndim == 1 and y.ndim == 1:

        def vector_matmul_pullback(zbar: Any) -> Any:
            return _NT, Thunk(lambda: proj(x, zbar * y)), Thunk(lambda: proj(y, x * zbar))
    elif x.ndim == 2:

        def vector_matmul_pullback(zbar: Any) -> Any:
            return _NT, Thunk(lambda: proj(x, matmul_grad(x, y, zbar, 0))), Thunk(lambda: proj(y, x.T @ zbar))
    else:

        def vector_matmul_pullback(zbar: Any) -> Any:
            return _NT, Thunk(lambda: proj(x, zbar @ y.T)), Thunk(lambda: proj(y, matmul_grad(x, y, zbar, 1)))

    vector_matmul_pullback.__name__ = vector_matmul_pullback.__qualname__ = "matmul_pullback"
    return vector_matmul_pullback


# -- vecdot, matvec, vecmat -----------------------------------------------------------------------


def _vecdot_pullback_of(x: Any, y: Any, axis: int = -1) -> Callable[[Any], Any]:
    if (xp := _native_namespace("vecdot", x, y)) is not None:
        ax = axis if axis < 0 else axis - max(len(x.shape), len(y.shape))

        def native_vecdot_pullback(zbar: Any) -> Any:  # z = sum(conj(x) * y, axis)
            g = xp.expand_dims(zbar, axis=ax)
            return _NT, unbroadcast_to(xp, x, y * _xp_conj(g, xp)), unbroadcast_to(xp, y, x * g)

        return native_vecdot_pullback
    a, b = as_arrays((x, y))
    if axis >= 0:
        axis -= max(np.ndim(a), np.ndim(b))

    def vecdot_pullback(zbar: Any) -> Any:  # z = sum(conj(x) * y, axis)
        g = np.expand_dims(zbar, axis)
        return _NT, proj(x, b * conj(g)), proj(y, a * g)

    return vecdot_pullback


def _native_matvec(xp: Any, a: Any, v: Any) -> Any:
    """``np.matvec`` in the array namespace ``xp`` (which has no such function): ``a @ v`` over
    the last axes."""
    return (a @ v[..., None])[..., 0]


def _native_vecmat(xp: Any, v: Any, a: Any) -> Any:
    """``np.vecmat`` in the array namespace ``xp``: ``conj(v) @ a`` over the last axes."""
    return (_xp_conj(v, xp)[..., None, :] @ a)[..., 0, :]


def _matvec_pullback_of(a: Any, v: Any) -> Callable[[Any], Any]:
    if (xp := _native_namespace("matvec", a, v)) is not None:
        def native_matvec_pullback(zbar: Any) -> Any:  # z = a @ v over the last axes
            abar = zbar[..., :, None] * _xp_conj(v, xp)[..., None, :]
            return (_NT, unbroadcast_to(xp, a, abar),
                    unbroadcast_to(xp, v, _native_matvec(xp, _conj_t(a, xp), zbar)))

        return native_matvec_pullback
    aa, vv = as_arrays((a, v))

    def matvec_pullback(zbar: Any) -> Any:  # z = a @ v over the last axes
        abar = np.expand_dims(zbar, -1) * np.expand_dims(conj(vv), -2)
        vbar = np.matvec(np.swapaxes(conj(aa), -1, -2), zbar)
        return _NT, proj(a, abar), proj(v, vbar)

    return matvec_pullback


def _vecmat_pullback_of(v: Any, a: Any) -> Callable[[Any], Any]:
    if (xp := _native_namespace("vecmat", v, a)) is not None:
        def native_vecmat_pullback(zbar: Any) -> Any:  # z = conj(v) @ a over the last axes
            vbar = _native_matvec(xp, a, _xp_conj(zbar, xp))
            return (_NT, unbroadcast_to(xp, v, vbar),
                    unbroadcast_to(xp, a, v[..., :, None] * zbar[..., None, :]))

        return native_vecmat_pullback
    vv, aa = as_arrays((v, a))

    def vecmat_pullback(zbar: Any) -> Any:  # z = conj(v) @ a over the last axes
        vbar = np.matvec(aa, conj(zbar))
        abar = np.expand_dims(vv, -1) * np.expand_dims(zbar, -2)
        return _NT, proj(v, vbar), proj(a, abar)

    return vecmat_pullback


def product_rules(f: Any, pullback_of: Callable[[Any, Any], Callable[[Any], Any]],
                  native: str | Callable[..., Any] | None = None) -> tuple[Any, Any]:
    """The rules of the bilinear product ``f(x, y, **ufunc_kwargs)`` (``matmul``, ``vecdot``,
    ``matvec``, ``vecmat``, ``x @ y``): the pullback ``pullback_of(x, y)`` builds, and the
    frule that is the product rule ``f(xdot, y) + f(x, ydot)``. ``native``: the array API's
    name of the product (or the product ``native(xp, x, y)`` written with the namespace ``xp``),
    computed in the operands' own namespace on non-NumPy arrays (the native tier;
    ``pullback_of`` must then handle them too).

    Example:
        >>> import numpy as np
        >>> reverse, forward = product_rules(np.matmul, _matmul_pullback_of)
        >>> forward((None, np.eye(2), np.ones((2, 1))), np.eye(2), np.ones((2, 1)))[1]
        array([[2.],
               [2.]])
    """
    name = getattr(f, "__name__", "product")

    def product_rrule(x: Any, y: Any, **kwargs: Any) -> Any:
        if kwargs:
            check_kwargs(f, kwargs)
        if native is not None and type(x) is not np.ndarray and (xp := foreign_namespace((x, y))) is not None:
            return _native_product(xp, native, x, y, kwargs), pullback_of(x, y)
        return f(x, y, **kwargs) if kwargs else f(x, y), pullback_of(x, y)

    def product_frule(tangents: Any, x: Any, y: Any, **kwargs: Any) -> Any:
        if kwargs:
            check_kwargs(f, kwargs)
        if native is not None and type(x) is not np.ndarray and (xp := foreign_namespace((x, y))) is not None:
            z = _native_product(xp, native, x, y, kwargs)
            return z, _native_product_tangent(xp, _native_fn(xp, native), z, (x, y), tangents[1:3])
        z = f(x, y, **kwargs)
        return z, product_tangent(f, z, (x, y), tangents, (0, 1))

    product_rrule.__name__ = product_rrule.__qualname__ = f"{name}_rrule"
    product_frule.__name__ = product_frule.__qualname__ = f"{name}_frule"
    return product_rrule, product_frule


def _native_namespace(name: str, *operands: Any) -> Any:
    """The operands' array namespace when one is a non-NumPy array (the native tier), else
    ``None``; the native tier takes arrays of one dtype (PyTorch's products do not promote)."""
    if all(type(v) is np.ndarray for v in operands) or (xp := foreign_namespace(operands)) is None:
        return None
    arrays = [v for v in operands if hasattr(v, "shape") and hasattr(v, "dtype")]
    if len(arrays) != len(operands) or len({v.dtype for v in arrays}) != 1:
        got = ", ".join(str(getattr(v, "dtype", type(v).__name__)) for v in operands)
        raise TypeError(f"numpy.{name}: the native rule (on {getattr(xp, '__name__', xp)} arrays) takes "
                        f"arrays of one dtype; got {got}: call it on NumPy arrays for the rest")
    return xp


def _native_fn(xp: Any, native: str | Callable[..., Any]) -> Callable[..., Any]:
    """The product ``native`` names (an array-API function of ``xp``, or ``native(xp, ...)``)."""
    return getattr(xp, native) if isinstance(native, str) else partial(native, xp)


def _native_product(xp: Any, native: str | Callable[..., Any], x: Any, y: Any, kwargs: dict[str, Any]) -> Any:
    """``x @ y`` (or another product) in the operands' own namespace (the native tier)."""
    name = native if isinstance(native, str) else native.__name__.removeprefix("_native_")
    if any(v is not None for v in kwargs.values()):
        raise TypeError(f"numpy.{name}: the native rule (on {getattr(xp, '__name__', xp)} arrays) takes no "
                        f"keyword arguments; got {sorted(kwargs)}: call it on NumPy arrays for those")
    _native_namespace(name, x, y)  # one dtype
    return _native_fn(xp, native)(x, y)


def _native_product_tangent(xp: Any, product: Callable[..., Any], z: Any, operands: Any,
                            tangents: Any) -> Any:
    """The product rule in the operands' own namespace: the sum over the operands with a non-zero
    tangent of ``product`` with that operand replaced by its tangent (``product(xdot, y) +
    product(x, ydot)`` for two)."""
    terms = [product(*operands[:p], t, *operands[p + 1:]) for p, t in enumerate(tangents) if not is_zero(t)]
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return unbroadcast_to(xp, z, total)


def linalg_vecdot_rrule(x1: Any, x2: Any, *, axis: int = -1) -> Any:
    """``np.linalg.vecdot``: the same product over any ``axis``."""
    if (xp := _native_namespace("linalg.vecdot", x1, x2)) is not None:
        return xp.vecdot(x1, x2, axis=axis), _vecdot_pullback_of(x1, x2, axis)
    return np.linalg.vecdot(x1, x2, axis=axis), _vecdot_pullback_of(x1, x2, axis)  # type: ignore[call-overload,unused-ignore]


def linalg_vecdot_frule(tangents: Any, x1: Any, x2: Any, *, axis: int = -1) -> Any:
    if (xp := _native_namespace("linalg.vecdot", x1, x2)) is not None:
        z = xp.vecdot(x1, x2, axis=axis)
        return z, _native_product_tangent(xp, partial(xp.vecdot, axis=axis), z, (x1, x2), tangents[1:3])
    z = np.linalg.vecdot(x1, x2, axis=axis)  # type: ignore[call-overload,unused-ignore]
    return z, product_tangent(partial(np.linalg.vecdot, axis=axis), z, (x1, x2),
                               tangents, (0, 1))


# -- tensordot and the products it covers: dot, inner, outer, vdot ------------------------------


def tensordot_axes(axes: Any, nda: int, ndb: int) -> tuple[list[int], list[int]]:
    """The contracted axes of ``a`` and ``b`` in ``np.tensordot(a, b, axes)``, non-negative.

    Example:
        >>> tensordot_axes(1, 2, 2), tensordot_axes(([0, -1], [1, 0]), 3, 2)
        (([1], [0]), ([0, 2], [1, 0]))
    """
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        return list(range(nda - n, nda)), list(range(n))
    ax_a, ax_b = axes
    ax_a = [ax_a] if isinstance(ax_a, (int, np.integer)) else list(ax_a)
    ax_b = [ax_b] if isinstance(ax_b, (int, np.integer)) else list(ax_b)
    return [int(i) % nda if nda else 0 for i in ax_a], [int(i) % ndb if ndb else 0 for i in ax_b]


def contraction_cotangents(ybar: Any, a: Any, b: Any, ax_a: list[int], ax_b: list[int],
                           xp: Any = np) -> tuple[Any, Any]:
    """Cotangents of ``a`` and ``b`` for ``y = np.tensordot(a, b, (ax_a, ax_b))`` (holomorphic),
    computed in the arrays' namespace ``xp`` (NumPy, or their own: the native tier).

    Example:
        >>> import numpy as np
        >>> abar, bbar = contraction_cotangents(np.ones(2), np.ones((2, 3)), np.ones(3), [1], [0])
        >>> abar.shape, bbar
        ((2, 3), array([2., 2., 2.]))
    """
    nda, ndb = np.ndim(a), np.ndim(b)  # the rank (a tracer's too)
    if nda == 0 or ndb == 0:  # a product with a scalar: broadcast, summed back by proj
        return ybar * _xp_conj(b, xp), ybar * _xp_conj(a, xp)
    free_a = [i for i in range(nda) if i not in ax_a]
    free_b = [i for i in range(ndb) if i not in ax_b]
    nfa = len(free_a)
    # abar: contract ybar's b-part with conj(b)'s free axes -> axes free_a + (b's contracted, sorted)
    ga = xp.tensordot(ybar, _xp_conj(b, xp), axes=(list(range(nfa, nfa + len(free_b))), free_b))
    sorted_b = sorted(ax_b)
    pos_a = [free_a.index(p) if p in free_a else nfa + sorted_b.index(ax_b[ax_a.index(p)])
             for p in range(nda)]
    abar = xp.permute_dims(ga, pos_a) if pos_a != list(range(nda)) else ga
    # bbar: contract conj(a)'s free axes with ybar's a-part -> axes (a's contracted, sorted) + free_b
    gb = xp.tensordot(_xp_conj(a, xp), ybar, axes=(free_a, list(range(nfa))))
    sorted_a = sorted(ax_a)
    ncb = len(ax_b)
    pos_b = [ncb + free_b.index(q) if q in free_b else sorted_a.index(ax_a[ax_b.index(q)])
             for q in range(ndb)]
    bbar = xp.permute_dims(gb, pos_b) if pos_b != list(range(ndb)) else gb
    return abar, bbar


def _tensordot_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return args[0] if args else kwargs.get("axes", 2)


def _native_contraction(xp: Any, a: Any, b: Any, ax_a: list[int], ax_b: list[int],
                        nextra: int) -> tuple[Any, Callable[[Any], Any]]:
    """``(y, pullback)`` of ``tensordot(a, b, (ax_a, ax_b))`` in the arrays' own namespace ``xp``
    (the native tier of ``tensordot``, ``dot`` and ``inner``; a 0-d operand multiplies)."""
    y = a * b if not (a.shape and b.shape) else xp.tensordot(a, b, axes=(ax_a, ax_b))

    def native_contraction_pullback(ybar: Any) -> Any:
        abar, bbar = contraction_cotangents(ybar, a, b, ax_a, ax_b, xp)
        return (_NT, unbroadcast_to(xp, a, abar), unbroadcast_to(xp, b, bbar), *(_NT,) * nextra)

    return y, native_contraction_pullback


def _native_contraction_tangent(xp: Any, a: Any, b: Any, ax_a: list[int], ax_b: list[int],
                                tangents: Any) -> tuple[Any, Any]:
    """``(y, ydot)`` of the native contraction (the product rule; zero tangents skipped)."""
    def product(u: Any, v: Any) -> Any:
        return u * v if not (u.shape and v.shape) else xp.tensordot(u, v, axes=(ax_a, ax_b))

    y = product(a, b)
    return y, _native_product_tangent(xp, product, y, (a, b), tangents[1:3])


def _dot_axes(nda: int, ndb: int) -> tuple[list[int], list[int]]:
    """``np.dot``'s contracted axes: the last of ``a``, the second-to-last of ``b`` (its only one
    for a vector)."""
    return [nda - 1], [0 if ndb == 1 else ndb - 2]


def tensordot_rrule(a: Any, b: Any, *args: Any, **kwargs: Any) -> Any:
    """``np.tensordot(a, b, axes)`` and ``np.linalg.tensordot(a, b, axes=axes)``."""
    axes = _tensordot_args(args, kwargs)
    if (xp := _native_namespace("tensordot", a, b)) is not None:
        return _native_contraction(xp, a, b, *tensordot_axes(axes, len(a.shape), len(b.shape)), len(args))
    y = np.tensordot(a, b, axes)
    aa, ba = as_arrays((a, b))
    ax_a, ax_b = tensordot_axes(axes, np.ndim(aa), np.ndim(ba))

    def tensordot_pullback(ybar: Any) -> Any:
        abar, bbar = contraction_cotangents(ybar, aa, ba, ax_a, ax_b)
        return (_NT, proj(a, abar), proj(b, bbar), *(_NT for _ in args))

    return y, tensordot_pullback


def tensordot_frule(tangents: Any, a: Any, b: Any, *args: Any, **kwargs: Any) -> Any:
    axes = _tensordot_args(args, kwargs)
    if (xp := _native_namespace("tensordot", a, b)) is not None:
        ax_a, ax_b = tensordot_axes(axes, len(a.shape), len(b.shape))
        return _native_contraction_tangent(xp, a, b, ax_a, ax_b, tangents)
    y = np.tensordot(a, b, axes)
    return y, product_tangent(partial(np.tensordot, axes=axes), y, (a, b), tangents, (0, 1))


def dot_rrule(a: Any, b: Any, *args: Any, **kwargs: Any) -> Any:
    """``np.dot`` and ``ndarray.dot``: contracts the last axis of ``a`` with the second-to-last
    of ``b`` (its only axis for a vector)."""
    if (xp := _native_namespace("dot", a, b)) is not None and not args and not kwargs:
        return _native_contraction(xp, a, b, *_dot_axes(len(a.shape), len(b.shape)), 0)
    y = np.dot(a, b, *args, **kwargs)
    aa, ba = as_arrays((a, b))

    def dot_pullback(ybar: Any) -> Any:
        abar, bbar = contraction_cotangents(ybar, aa, ba, *_dot_axes(np.ndim(aa), np.ndim(ba)))
        return (_NT, proj(a, abar), proj(b, bbar), *(_NT for _ in args))

    return y, dot_pullback


def dot_frule(tangents: Any, a: Any, b: Any, *args: Any, **kwargs: Any) -> Any:
    if (xp := _native_namespace("dot", a, b)) is not None and not args and not kwargs:
        return _native_contraction_tangent(xp, a, b, *_dot_axes(len(a.shape), len(b.shape)), tangents)
    y = np.dot(a, b, *args, **kwargs)
    return y, product_tangent(np.dot, y, (a, b), tangents, (0, 1))


def inner_rrule(a: Any, b: Any) -> Any:
    if (xp := _native_namespace("inner", a, b)) is not None:
        return _native_contraction(xp, a, b, [len(a.shape) - 1], [len(b.shape) - 1], 0)
    y = np.inner(a, b)
    aa, ba = as_arrays((a, b))

    def inner_pullback(ybar: Any) -> Any:
        abar, bbar = contraction_cotangents(ybar, aa, ba, [np.ndim(aa) - 1], [np.ndim(ba) - 1])
        return _NT, proj(a, abar), proj(b, bbar)

    return y, inner_pullback


def inner_frule(tangents: Any, a: Any, b: Any) -> Any:
    if (xp := _native_namespace("inner", a, b)) is not None:
        return _native_contraction_tangent(xp, a, b, [len(a.shape) - 1], [len(b.shape) - 1], tangents)
    y = np.inner(a, b)
    return y, product_tangent(np.inner, y, (a, b), tangents, (0, 1))


def _outer_pullback_of(a: Any, b: Any, nextra: int, xp: Any = np) -> Callable[[Any], Any]:
    def outer_pullback(ybar: Any) -> Any:
        abar = xp.tensordot(ybar, _xp_conj(xp.reshape(xp.asarray(b), (-1,)), xp), axes=([1], [0]))
        bbar = xp.tensordot(_xp_conj(xp.reshape(xp.asarray(a), (-1,)), xp), ybar, axes=([0], [0]))
        if xp is np:
            return (_NT, proj(a, np.reshape(abar, np.shape(a))), proj(b, np.reshape(bbar, np.shape(b))),
                    *(_NT,) * nextra)
        return (_NT, unbroadcast_to(xp, a, xp.reshape(abar, a.shape)),
                unbroadcast_to(xp, b, xp.reshape(bbar, b.shape)), *(_NT,) * nextra)

    return outer_pullback


def _native_outer(xp: Any, a: Any, b: Any) -> Any:
    return xp.reshape(a, (-1, 1)) * xp.reshape(b, (1, -1))


def outer_rrule(a: Any, b: Any, *args: Any) -> Any:
    """``np.outer`` (operands flattened)."""
    if (xp := _native_namespace("outer", a, b)) is not None and not args:
        return _native_outer(xp, a, b), _outer_pullback_of(a, b, 0, xp)
    return np.outer(a, b, *args), _outer_pullback_of(a, b, len(args))


def linalg_outer_rrule(x1: Any, x2: Any) -> Any:
    """``np.linalg.outer`` (vectors only)."""
    return outer_rrule(x1, x2) if _native_namespace("linalg.outer", x1, x2) is not None \
        else (np.linalg.outer(x1, x2), _outer_pullback_of(x1, x2, 0))


def outer_frule(tangents: Any, a: Any, b: Any, *args: Any) -> Any:
    if (xp := _native_namespace("outer", a, b)) is not None and not args:
        y = _native_outer(xp, a, b)
        return y, _native_product_tangent(xp, partial(_native_outer, xp), y, (a, b), tangents[1:3])
    y = np.outer(a, b, *args)
    return y, product_tangent(np.outer, y, (a, b), tangents, (0, 1))


def _native_vdot(xp: Any, a: Any, b: Any) -> Any:
    """``np.vdot`` in the array namespace ``xp``: ``sum(conj(a) * b)`` of the flattened operands."""
    return xp.vecdot(xp.reshape(a, (-1,)), xp.reshape(b, (-1,)))


def vdot_rrule(a: Any, b: Any) -> Any:
    if (xp := _native_namespace("vdot", a, b)) is not None:
        def native_vdot_pullback(ybar: Any) -> Any:
            return (_NT, xp.reshape(_xp_conj(ybar, xp) * xp.reshape(b, (-1,)), a.shape),
                    xp.reshape(ybar * xp.reshape(a, (-1,)), b.shape))

        return _native_vdot(xp, a, b), native_vdot_pullback
    y = np.vdot(a, b)

    def vdot_pullback(ybar: Any) -> Any:
        # y = sum(conj(a) * b): a enters anti-holomorphically, so abar = conj(ybar) * b.
        abar = np.reshape(conj(ybar) * np.ravel(b), np.shape(a))
        bbar = np.reshape(ybar * np.ravel(a), np.shape(b))
        return _NT, proj(a, abar), proj(b, bbar)

    return y, vdot_pullback


def vdot_frule(tangents: Any, a: Any, b: Any) -> Any:
    if (xp := _native_namespace("vdot", a, b)) is not None:
        y = _native_vdot(xp, a, b)
        return y, _native_product_tangent(xp, partial(_native_vdot, xp), y, (a, b), tangents[1:3])
    y = np.vdot(a, b)
    return y, product_tangent(np.vdot, y, (a, b), tangents, (0, 1))


# -- einsum -----------------------------------------------------------------------------------------

_LABELS = string.ascii_uppercase + string.ascii_lowercase  # sorted like numpy's integer labels


def _sublist_to_str(sub: Any) -> str:
    return "".join("..." if s is Ellipsis else _LABELS[int(s)] for s in sub)


def einsum_operands(args: tuple[Any, ...]) -> list[int]:
    """The positions of the operands among ``np.einsum``'s arguments (subscripts string first,
    or the interleaved ``op, sublist, op, sublist, ...[, output]`` form).

    Example:
        >>> A, x = [[1.0]], [1.0]
        >>> einsum_operands(("ij,j->i", A, x)), einsum_operands((A, [0, 1], x, [1]))
        ([1, 2], [0, 2])
    """
    if isinstance(args[0], str):
        return list(range(1, len(args)))
    return [2 * i for i in range(len(args) // 2)]


def _einsum_spec(args: tuple[Any, ...]) -> tuple[list[str], str, list[int]]:
    """``(inputs, output, operand positions)`` of an einsum call, with every '...' spelled out as
    explicit labels and the implicit output made explicit."""
    positions = einsum_operands(args)
    if isinstance(args[0], str):
        subscripts = args[0]
    else:
        subscripts = ",".join(_sublist_to_str(args[p + 1]) for p in positions)
        if len(args) % 2:
            subscripts += "->" + _sublist_to_str(args[-1])
    inputs, out = _explicit_spec(subscripts, tuple(np.ndim(args[p]) for p in positions))
    return list(inputs), out, positions


@functools.lru_cache(maxsize=256)
def _explicit_spec(subscripts: str, ndims: tuple[int, ...]) -> tuple[tuple[str, ...], str]:
    """The operands' and the output's labels of ``subscripts`` for operands of ``ndims``
    dimensions, '...' spelled out, the output explicit (kept per subscripts and dimensions: a
    loop calls einsum with the same ones)."""
    subscripts = subscripts.replace(" ", "")
    ins, arrow, out = subscripts.partition("->")
    inputs = ins.split(",")
    if len(inputs) != len(ndims):
        raise ValueError(f"einsum subscripts {subscripts!r} name {len(inputs)} operands, "
                         f"got {len(ndims)}")
    if not arrow:
        letters = [c for s in inputs for c in s.replace("...", "")]
        out = ("..." if any("..." in s for s in inputs) else "") + "".join(
            sorted(c for c in set(letters) if letters.count(c) == 1))
    used = set(subscripts)
    free = [c for c in _LABELS if c not in used]
    ell = [nd - (len(s) - 3) for s, nd in zip(inputs, ndims, strict=True) if "..." in s]
    n_ell = max(ell, default=0)
    ell_labels = "".join(free[:n_ell])
    inputs = [
        s.replace("...", ell_labels[n_ell - (nd - (len(s) - 3)):]) if "..." in s else s
        for s, nd in zip(inputs, ndims, strict=True)
    ]
    return tuple(inputs), out.replace("...", ell_labels)


def _einsum_operand_cotangent(ybar: Any, i: int, inputs: list[str], out: str, ops: list[Any],
                              optimize: Any, xp: Any = np) -> Any:
    """Cotangent of operand ``i`` of ``einsum(inputs -> out)``: contract ``ybar`` with the other
    (conjugated) operands, then restore summed, broadcast and repeated labels of operand ``i``
    (in the operands' namespace ``xp``: NumPy, or their own in the native tier)."""
    sub, x = inputs[i], ops[i]
    xshape = np.shape(x)
    sizes: dict[str, int] = {}
    for s, op in zip(inputs, ops, strict=True):
        for c, n in zip(s, np.shape(op), strict=True):
            sizes[c] = max(sizes.get(c, 1), n)
    elsewhere = set(out).union(*(set(s) for j, s in enumerate(inputs) if j != i))
    first: dict[str, int] = {}
    for p, c in enumerate(sub):
        first.setdefault(c, p)
    unique = list(first)
    kept = [c for c in unique if c in elsewhere and not (xshape[first[c]] == 1 and sizes[c] != 1)]
    others = [j for j in range(len(ops)) if j != i]
    spec = ",".join([out] + [inputs[j] for j in others]) + "->" + "".join(kept)
    conjugated = [_xp_conj(ops[j], xp) for j in others]
    if xp is np:
        g = np.einsum(spec, ybar, *conjugated, optimize=optimize)
    else:
        g = xp.einsum(spec, ybar, *conjugated)
    if len(kept) < len(unique):  # summed or broadcast labels: spread back
        g = xp.broadcast_to(xp.reshape(g, tuple(xshape[first[c]] if c in kept else 1 for c in unique)),
                            tuple(xshape[first[c]] for c in unique))
    if len(unique) < len(sub):  # repeated labels (a diagonal): embed with a mask
        pairs = enumerate(zip(sub, xshape, strict=True))
        g = xp.reshape(g, tuple(n if first[c] == p else 1 for p, (c, n) in pairs))
        keep = np.ones(xshape, dtype=bool)
        grids = np.indices(xshape, sparse=True)
        for p, c in enumerate(sub):
            if first[c] != p:
                keep = keep & (grids[p] == grids[first[c]])
        g = constant_like(xp, keep, ybar) * g
    return g


def _native_einsum(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``(xp, explicit subscripts, inputs, out, positions)`` of an einsum call on non-NumPy arrays
    (the native tier; ``optimize=`` is a hint it ignores), else ``None``."""
    inputs, out, positions = _einsum_spec(args)
    ops = [args[p] for p in positions]
    if (xp := _native_namespace("einsum", *ops)) is None:
        return None
    if any(k != "optimize" for k in kwargs):
        raise TypeError(f"numpy.einsum: the native rule (on {getattr(xp, '__name__', xp)} arrays) takes "
                        f"optimize= only; got {sorted(kwargs)}: call it on NumPy arrays for the rest")
    return xp, ",".join(inputs) + "->" + out, inputs, out, positions


def einsum_rrule(*args: Any, **kwargs: Any) -> Any:
    if (native := _native_einsum(args, kwargs)) is not None:
        xp, spec, inputs, out, positions = native
        ops = [args[p] for p in positions]

        def native_einsum_pullback(ybar: Any) -> Any:
            cts: list[Any] = [_NT] * len(args)
            for i, p in enumerate(positions):
                g = _einsum_operand_cotangent(ybar, i, inputs, out, ops, None, xp)
                cts[p] = unbroadcast_to(xp, ops[i], g)
            return (_NT, *cts)

        return xp.einsum(spec, *ops), native_einsum_pullback
    y = np.einsum(*args, **kwargs)
    inputs, out, positions = _einsum_spec(args)
    ops = [args[p] for p in positions]
    arrays = list(as_arrays(tuple(ops)))
    optimize = kwargs.get("optimize", False)

    def einsum_pullback(ybar: Any) -> Any:
        cts: list[Any] = [_NT] * len(args)
        for i, p in enumerate(positions):
            cts[p] = proj(ops[i], _einsum_operand_cotangent(ybar, i, inputs, out, arrays, optimize))
        return (_NT, *cts)

    return y, einsum_pullback


def einsum_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
    if (native := _native_einsum(args, kwargs)) is not None:
        xp, spec, _, _, positions = native
        ops = [args[p] for p in positions]
        z = xp.einsum(spec, *ops)
        dots = [tangents[1 + p] for p in positions]
        return z, _native_product_tangent(xp, partial(xp.einsum, spec), z, ops, dots)
    y = np.einsum(*args, **kwargs)
    return y, product_tangent(partial(np.einsum, **kwargs), y, args, tangents, einsum_operands(args))


#: The rules of ``np.matmul``, which ``np.linalg.matmul`` shares.
_MATMUL_RULES = product_rules(np.matmul, _matmul_pullback_of, native="matmul")

#: The generalised ufuncs of NumPy 2.0 (``vecdot``) and 2.2 (``matvec``, ``vecmat``) this NumPy has,
#: each with its pullback and native spelling.
_GUFUNCS = {
    f: (pullback_of, native)
    for f, pullback_of, native in ((getattr(np, "vecdot", None), _vecdot_pullback_of, "vecdot"),
                                   (getattr(np, "matvec", None), _matvec_pullback_of, _native_matvec),
                                   (getattr(np, "vecmat", None), _vecmat_pullback_of, _native_vecmat))
    if isinstance(f, np.ufunc)
}

RULES: tuple[RulePair, ...] = (
    RulePair(operator.matmul, *product_rules(operator.matmul, _matmul_pullback_of, native="matmul")),
    RulePair(np.matmul, *_MATMUL_RULES),
    RulePair(np.linalg.matmul, *_MATMUL_RULES),
    RulePair(np.linalg.vecdot, linalg_vecdot_rrule, linalg_vecdot_frule),
    RulePair(np.dot, dot_rrule, dot_frule),
    RulePair(np.ndarray.dot, dot_rrule, dot_frule),
    RulePair(np.inner, inner_rrule, inner_frule),
    RulePair(np.outer, outer_rrule, outer_frule),
    RulePair(np.linalg.outer, linalg_outer_rrule, outer_frule),
    RulePair(np.vdot, vdot_rrule, vdot_frule),
    RulePair(np.tensordot, tensordot_rrule, tensordot_frule),
    RulePair(np.linalg.tensordot, tensordot_rrule, tensordot_frule),
    RulePair(np.einsum, einsum_rrule, einsum_frule),
    *(RulePair(f, *product_rules(f, pullback_of, native=native))
      for f, (pullback_of, native) in _GUFUNCS.items()),
)
