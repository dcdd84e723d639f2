"""The entry points that combine modes: ``jacobian`` (forward or reverse), ``hessian`` (forward
over reverse), ``hessian_reverse``, ``diaghessian`` and ``forwarddiff`` (forward inside reverse).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from zygotepy import _dispatch
from zygotepy._forward import basis, jacobian_forward, push
from zygotepy._reverse import gradient, reverse_jacobian
from zygotepy._trace import LEVELS, unbox_all


def jacobian(f: Callable[..., Any], *args: Any, mode: str = "auto", chunk: int = 64,
             **kwargs: Any) -> tuple[Any, ...]:
    """The Jacobian of ``f`` for each argument, shape ``out.shape + arg.shape``.

    ``mode="forward"`` pushes ``chunk`` input directions per pass (frules); ``"reverse"`` pulls
    back one output direction per pass (rrules); ``"auto"`` picks forward when there are fewer
    inputs than outputs.

    Example:
        >>> import numpy as np, zygotepy as zp
        >>> x = np.array([1.0, 2.0])
        >>> J_fwd, = zp.jacobian(lambda v: np.outer(v, v).ravel(), x, mode="forward")
        >>> J_rev, = zp.jacobian(lambda v: np.outer(v, v).ravel(), x, mode="reverse")
        >>> J_fwd.shape, bool(np.allclose(J_fwd, J_rev))
        ((4, 2), True)
    """
    if mode == "auto":
        n_in = sum(int(np.size(a)) for a in args)
        n_out = int(np.size(unbox_all(f(*args, **kwargs)))) if n_in else 0
        mode = "forward" if n_in < n_out else "reverse"
    if mode == "forward":
        return jacobian_forward(f, args, kwargs, chunk)
    if mode == "reverse":
        return reverse_jacobian(f, *args, **kwargs)
    raise ValueError(f"mode must be 'auto', 'forward' or 'reverse', not {mode!r}")


def _gradient_of(f: Any) -> Any:
    return lambda v: gradient(f, v)[0]


def hessian(f: Callable[..., Any], x: Any, chunk: int = 128) -> Any:
    """The Hessian of a scalar ``f`` at ``x`` by forward-over-reverse; shape ``x.shape + x.shape``.

    ``chunk`` input directions are pushed per pass (one pass for up to 128 inputs): every
    pass re-runs the gradient, so fewer, wider passes are cheaper.

    Example:
        >>> import numpy as np, zygotepy as zp
        >>> zp.hessian(lambda v: v[0] ** 2 * v[1], np.array([1.0, 2.0]))
        array([[4., 2.],
               [2., 0.]])
    """
    return jacobian(_gradient_of(f), x, mode="forward", chunk=chunk)[0]


def hessian_reverse(f: Callable[..., Any], x: Any) -> Any:
    """The Hessian of a scalar ``f`` at ``x`` by reverse-over-reverse.

    Example:
        >>> import numpy as np, zygotepy as zp
        >>> zp.hessian_reverse(lambda v: v[0] ** 2 * v[1], np.array([1.0, 2.0]))
        array([[4., 2.],
               [2., 0.]])
    """
    return jacobian(_gradient_of(f), x, mode="reverse")[0]


def diaghessian(f: Callable[..., Any], x: Any) -> Any:
    """The diagonal of the Hessian of a scalar ``f`` at ``x`` (shape of ``x``).

    Example:
        >>> import numpy as np, zygotepy as zp
        >>> zp.diaghessian(lambda v: np.sum(v ** 3), np.array([1.0, 2.0]))
        array([ 6., 12.])
    """
    H = np.asarray(hessian(f, x))
    n = int(np.size(x))
    return np.diagonal(H.reshape(n, n)).reshape(np.shape(x)) if np.ndim(x) else float(H)


def forwarddiff(f: Callable[[Any], Any], x: Any) -> Any:
    """``f(x)``, with the derivative with respect to ``x`` computed by forward mode.

    Inside reverse mode this is Zygote's escape hatch: the Jacobian of ``f`` is built with
    frules (cheap when ``x`` is small) and pulled back through. Unlike Zygote's, gradients with
    respect to values ``f`` closes over and to implicit ``params`` are kept: they flow through
    reverse mode as usual.

    Example:
        >>> import numpy as np, zygotepy as zp
        >>> W = np.array([[1.0, 2.0], [3.0, 4.0]])
        >>> zp.gradient(lambda x: np.sum(zp.forwarddiff(lambda v: np.tanh(W @ v), x)), np.zeros(2))
        (array([4., 6.]),)
    """
    levels = LEVELS.get()
    trace = _dispatch.innermost(levels, (x,), {}, False) if levels else None
    x0 = _dispatch.unbox(x, trace)[0] if trace is not None else x
    if trace is None or not trace.records:
        return _dispatch.call(f, x)
    n = int(np.size(x0))
    sets = [(basis(x0, j),) for j in range(n)]
    y, dots = push(f, (x0,), sets)
    J = _dispatch.call(np.stack, list(dots), -1) if dots else np.zeros((*np.shape(y), 0))
    J = _dispatch.call(np.reshape, J, (*np.shape(unbox_all(y)), *np.shape(x0)))
    # zero, with derivative one for this trace only: outer traces already see x through y and J
    dx = _dispatch.call(np.subtract, x, x0)
    return _dispatch.call(np.add, y, _dispatch.call(np.tensordot, J, dx, np.ndim(x0)))
