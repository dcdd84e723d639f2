"""``@zygotepy.adjoint``: Zygote's legacy custom adjoints, as a shim over rulescore's machinery.

An adjoint body returns ``(y, back)``; ``back`` receives the output cotangent as users see it
(``None``, numbers, arrays, ``Tangent`` or whatever an upstream adjoint produced) and returns
one cotangent per argument (no entry for the function), ``None`` for no gradient, or ``None``
alone for none at all. The shim turns that into an ordinary rulescore rule registered in
zygotepy's own table, which the dispatcher consults before rulescore's registry (so adjoints
take precedence and stay invisible to other AD systems). Bodies and ``back`` run through the
dispatcher, so outer levels differentiate them (``nestlevel`` counts levels that way).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import rulescore as rc
from rulescore._checks import callable_name
from rulescore._zeros import NoTangent, ZeroTangent
from zygotepy import _dispatch
from zygotepy._adjoint_table import ADJOINTS
from zygotepy._edge import to_internal, to_user


def adjoint(f: Any, *types: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Define a custom adjoint (Zygote's ``@adjoint``) for any callable ``f``.

    The decorated body takes ``f``'s arguments and returns ``(y, back)``. Optional ``types``
    restrict it to arguments of those classes (``@zp.adjoint(width, Point)``).

    Example:
        >>> import zygotepy as zp
        >>> def mul(a, b): return a * b
        >>> @zp.adjoint(mul)
        ... def _(a, b):
        ...     return mul(a, b), lambda c: (c * b, c * a)
        >>> zp.gradient(mul, 2, 3)
        (3.0, 2.0)
    """
    name = callable_name(f).rsplit(".", 1)[-1]

    def decorate(body: Callable[..., Any]) -> Callable[..., Any]:
        def adjoint_rule(*args: Any, **kwargs: Any) -> Any:
            result = _dispatch.call(body, *args, **kwargs)
            if not (isinstance(result, tuple) and len(result) == 2 and callable(result[1])):
                raise rc.RuleError(f"the adjoint of {callable_name(f)} returned {type(result).__name__}; "
                                   "it must return (y, back)")
            y, back = result

            def adjoint_pullback(ybar: Any) -> tuple[Any, ...]:
                grads = _dispatch.call(back, to_user(ybar, y))
                if grads is None:
                    return (NoTangent(), *(ZeroTangent() for _ in args))
                if not isinstance(grads, tuple):
                    grads = (grads,) if len(args) == 1 else grads
                if not isinstance(grads, tuple) or len(grads) != len(args):
                    got = len(grads) if isinstance(grads, tuple) else type(grads).__name__
                    raise rc.RuleError(
                        f"the adjoint of {callable_name(f)} returned {got} gradients from its pullback; "
                        f"expected a tuple of {len(args)} (one per argument, no entry for the function)"
                    )
                return (NoTangent(), *(to_internal(g, a) for g, a in zip(grads, args, strict=True)))

            adjoint_pullback.__name__ = adjoint_pullback.__qualname__ = f"{name}_adjoint_pullback"
            return y, adjoint_pullback

        adjoint_rule.__name__ = adjoint_rule.__qualname__ = f"{name}_adjoint"
        ADJOINTS.register(f, *types)(adjoint_rule)
        return body

    return decorate
