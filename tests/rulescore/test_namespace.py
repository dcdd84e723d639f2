"""``rc.array_namespace`` and the native tier's dtype test keep what they find per type and per dtype
(found once: the native tier asks at every rule application); the answers must be those of
array-api-compat and of the dtype itself, whatever was asked before."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rulescore as rc
from rulescore._namespace import foreign_namespace, is_complex_array

torch = pytest.importorskip("torch", reason="needs torch (the `torch` extra)")
jax = pytest.importorskip("jax", reason="needs jax (the `jax` extra)")
array_api_compat = pytest.importorskip("array_api_compat")
import jax.numpy as jnp  # noqa: E402

DTYPES = ["float32", "float64", "complex64", "complex128", "int32", "int64", "bool"]


def _array(library, dtype):
    value = np.ones(3, dtype=dtype)
    if library == "torch":
        return torch.as_tensor(value)
    if library == "jax":
        return jnp.asarray(value)
    return value


@settings(max_examples=40, deadline=None)
@given(asks=st.lists(st.tuples(st.sampled_from(["numpy", "torch", "jax"]), st.sampled_from(DTYPES)),
                     min_size=1, max_size=12))
def test_is_complex_array_is_the_dtypes_own_answer_in_any_order_of_asking(asks) -> None:
    for library, dtype in asks:
        x = _array(library, dtype)
        xp = rc.array_namespace(x)
        assert is_complex_array(xp, x) is (np.dtype(dtype).kind == "c")


@settings(max_examples=30, deadline=None)
@given(asks=st.lists(st.sampled_from(["numpy", "torch", "jax", "numpy+torch", "float+jax"]), min_size=1,
                     max_size=10))
def test_array_namespace_is_array_api_compats_in_any_order_of_asking(asks) -> None:
    for ask in asks:
        args = [1.5 if part == "float" else _array(part, "float64") for part in ask.split("+")]
        foreign = [a for a in args if not isinstance(a, (float, np.ndarray))]
        want = np if not foreign else array_api_compat.array_namespace(*foreign)
        assert rc.array_namespace(*args) is want
        assert foreign_namespace(tuple(args)) is (None if not foreign else want)


def test_arrays_of_two_libraries_are_refused_every_time() -> None:
    """A failed lookup is not kept: each call raises, as array-api-compat does."""
    for _ in range(2):
        with pytest.raises(TypeError, match="[Mm]ultiple namespaces"):
            rc.array_namespace(torch.ones(2), jnp.ones(2))


def test_a_jax_tracer_gets_jax_numpy_under_each_transformation() -> None:
    seen = []

    def f(x):
        seen.append(rc.array_namespace(x))
        return rc.array_namespace(x).sin(x).sum()

    jax.grad(f)(jnp.ones(2))
    jax.jit(f)(jnp.ones(2))
    jax.vmap(f)(jnp.ones((2, 2)))
    want = array_api_compat.array_namespace(jnp.ones(2))
    assert seen and all(ns is want for ns in seen)


def test_an_object_with_an_unhashable_dtype_is_answered_without_the_cache() -> None:
    class Unhashable:
        __hash__ = None  # type: ignore[assignment]

    class Namespace:
        @staticmethod
        def isdtype(dtype, kind):
            return kind == "complex floating"

    class Array:
        dtype = Unhashable()

    assert is_complex_array(Namespace, Array()) is True
    assert is_complex_array(np, 1.0) is False
