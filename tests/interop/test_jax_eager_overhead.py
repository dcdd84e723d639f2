"""An eager ``jax.grad`` through ``rulescore.interop.jax``'s native tier does no more work than
through a hand-written ``jax.custom_vjp`` of the same function (issue 31: within 1.1x of it).
Both are counts, not timings: the JAX primitives dispatched eagerly from Python (each one
10-50 µs: a ``stage`` per NumPy result, a ``convert_element_type``, zeros) and the Python calls
made per gradient (JAX's own linearization of a primitive with only a JVP rule traces a jaxpr
for it at every call). Before ``call_p`` had its own linearization rule and its NumPy results
one jitted conversion, ``sum(np.sin(x))`` dispatched 4 primitives to ``custom_vjp``'s 3 and made
1,680 Python calls to its 1,514 (JAX 0.10.2; now 3 and 1,231)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import rulescore as rc

jax = pytest.importorskip("jax", reason="needs jax (the `jax` extra)")
import jax.numpy as jnp  # noqa: E402

import rulescore.interop.jax as rjax  # noqa: E402

#: JAX's eager evaluation of one primitive (no public spelling): the calls counted as dispatches
EVAL_PRIMITIVE = jax._src.core.EvalTrace.process_primitive.__code__


def user_sin(x: Any) -> Any:
    return rc.array_namespace(x).sin(x)


@rc.rrule.register(user_sin)
def user_sin_rrule(x: Any) -> Any:
    xp = rc.array_namespace(x)
    return xp.sin(x), lambda ybar: (rc.NoTangent(), ybar * xp.cos(x))


@jax.custom_vjp
def custom_sin(x: Any) -> Any:
    return jnp.sin(x)


custom_sin.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (g * jnp.cos(x),))


@jax.custom_vjp
def custom_multiply(x: Any, y: Any) -> Any:
    return x * y


custom_multiply.defvjp(lambda x, y: (x * y, (x, y)), lambda r, g: (g * r[1], g * r[0]))


@jax.custom_vjp
def custom_exp(x: Any) -> Any:
    return jnp.exp(x)


custom_exp.defvjp(lambda x: (jnp.exp(x), jnp.exp(x)), lambda y, g: (g * y,))

X = jnp.asarray(np.random.default_rng(0).uniform(-2.0, 2.0, 1000))
Y = jnp.asarray(np.random.default_rng(1).uniform(-2.0, 2.0, 1000))

# (wrapped function, hand-written custom_vjp, arguments)
CASES = {
    "np.sin": (np.sin, custom_sin, (X,)),
    "user_sin": (user_sin, custom_sin, (X,)),
    "np.exp": (np.exp, custom_exp, (X,)),
    "np.multiply": (np.multiply, custom_multiply, (X, Y)),
}


def _work(grad: Callable[..., Any], args: tuple[Any, ...]) -> tuple[int, int]:
    """(primitives dispatched eagerly, Python calls) in one warm call of ``grad``."""
    for _ in range(3):  # caches, compilation, the interpreter's specialisation
        jax.block_until_ready(grad(*args))
    counts = [0, 0]

    def profile(frame: Any, event: str, _: Any) -> None:
        if event == "call":
            counts[1] += 1
            counts[0] += frame.f_code is EVAL_PRIMITIVE

    sys.setprofile(profile)
    try:
        jax.block_until_ready(grad(*args))
    finally:
        sys.setprofile(None)
    return counts[0], counts[1]


def _grad(f: Callable[..., Any], n_args: int) -> Callable[..., Any]:
    return jax.grad(lambda *a: jnp.sum(f(*a)), argnums=tuple(range(n_args)))


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_eager_gradient_does_no_more_work_than_custom_vjp(name: str) -> None:
    f, own, args = CASES[name]
    wrapped = rjax.wrap(f)
    np.testing.assert_allclose(np.asarray(_grad(wrapped, len(args))(*args)),
                               np.asarray(_grad(own, len(args))(*args)), rtol=1e-12)
    assert wrapped.tier == "native"
    (ours, our_calls), (theirs, their_calls) = _work(_grad(wrapped, len(args)), args), \
        _work(_grad(own, len(args)), args)
    assert ours <= theirs, f"{ours} primitives dispatched eagerly, custom_vjp {theirs}"
    if getattr(jax.config, "jax_use_direct_linearize", True):  # else (JAX 0.5.3) by partial evaluation
        assert our_calls <= their_calls, f"{our_calls} Python calls per gradient, custom_vjp {their_calls}"
