"""Rules for Python's builtins (rulescore/rules/builtins.py): the table of cases checked against
finite differences, plus targeted tests (min/max selection, sum of sequences, pow with a
modulus, divmod, complex)."""

from __future__ import annotations

import builtins
import inspect
from typing import Any

import numpy as np
import pytest
from hypothesis import strategies as st

import rulescore as rc
import rulescore.testing.strategies as S
from tests.rulescore.rules._cases import RuleCase, case_id, check_case

N = 5  # hypothesis examples per case


def case(f: Any, args: tuple[Any, ...], name: str = "", kwargs: dict[str, Any] | None = None,
         **options: Any) -> RuleCase:
    return RuleCase(f, args, kwargs or {}, name=name, max_examples=options.pop("max_examples", N), **options)


def R(lo: float = -3.0, hi: float = 3.0) -> st.SearchStrategy[float]:
    return S.scalars(lo, hi)


def distinct(n: int) -> st.SearchStrategy[list[float]]:
    """``n`` floats at least 0.5 apart (min and max are smooth there)."""
    return st.builds(lambda perm, offset: [p * 0.5 + offset for p in perm],
                     st.permutations(list(range(n))), st.floats(-2.0, 0.0))


F = R()
C = S.scalars(dtype=complex)
A3 = S.arrays(shape=(3,))
LOW, HIGH = R(-3.0, -1.0), R(1.0, 3.0)

NONDIFF = [
    case(f, args, max_examples=2)
    for f, args in [
        (builtins.int, (F,)), (builtins.round, (F,)), (builtins.len, ([1.0, 2.0],)),
        (builtins.isinstance, (F, float)), (builtins.issubclass, (float, object)), (builtins.type, (F,)),
        (builtins.id, (F,)), (builtins.hash, (F,)), (builtins.print, ("",)), (builtins.repr, (F,)),
        (builtins.str, (F,)), (builtins.bool, (F,)), (builtins.range, (3,)), (builtins.callable, (F,)),
        (builtins.hasattr, (F, "real")), (builtins.ord, ("a",)), (builtins.chr, (97,)),
        (builtins.format, (F, ".2f")), (builtins.any, ([0.0, 1.0],)), (builtins.all, ([0.0, 1.0],)),
        (builtins.bin, (5,)), (builtins.hex, (5,)), (builtins.oct, (5,)), (builtins.ascii, ("a",)),
        (inspect.getattr_static, (A3, "shape")), (inspect.getattr_static, (F, "columns", None)),
    ]
]

CASES = [
    case(builtins.abs, (st.one_of(R(0.3, 3.0), R(-3.0, -0.3)),), "float"),
    case(builtins.abs, (-3,), "int"),
    case(builtins.abs, (C.filter(lambda z: abs(z) > 0.3),), "complex"),
    case(builtins.abs, (S.arrays(shape=(3,), min_value=0.3),), "array"),
    case(builtins.float, (F,), "float"),
    case(builtins.float, (S.scalars(dtype=np.float32),), "float32"),
    case(builtins.float, (S.arrays(shape=()),), "0d"),
    case(builtins.float, (2,), "int"),
    case(builtins.float, ("1.5",), "str"),
    case(builtins.complex, (F,), "one-real"),
    case(builtins.complex, (F, F), "re-im"),
    case(builtins.complex, (C,), "complex"),
    case(builtins.complex, (C, C), "complex-parts"),
    case(builtins.complex, ("1+2j",), "str"),
    case(builtins.sum, (st.lists(F, max_size=4),), "list"),
    case(builtins.sum, (st.tuples(F, A3),), "scalar-and-array"),
    case(builtins.sum, (st.lists(F, min_size=1, max_size=3), F), "start"),
    case(builtins.sum, (st.lists(A3, min_size=1, max_size=3), A3), "arrays"),
    case(builtins.sum, (S.arrays(shape=(3, 2)),), "array"),
    case(builtins.sum, (st.tuples(C, F),), "complex"),
    case(builtins.max, (LOW, HIGH), "2-args"),
    case(builtins.max, (HIGH, LOW, R(-0.5, 0.5)), "3-args"),
    case(builtins.max, (distinct(4),), "list"),
    case(builtins.max, (distinct(3).map(tuple),), "tuple"),
    case(builtins.max, (distinct(4).map(np.array),), "array"),
    case(builtins.max, (st.tuples(LOW, HIGH).map(list),), "key", {"key": lambda v: -v}),
    case(builtins.max, ([], ), "default", {"default": 0.0}, max_examples=1),
    case(builtins.min, (LOW, HIGH), "2-args"),
    case(builtins.min, (HIGH, R(-0.5, 0.5), LOW), "3-args"),
    case(builtins.min, (distinct(4),), "list"),
    case(builtins.min, (distinct(3).map(tuple),), "tuple"),
    case(builtins.min, (distinct(4).map(np.array),), "array"),
    case(builtins.min, (st.tuples(LOW, HIGH).map(list),), "key", {"key": abs}),
    case(builtins.pow, (R(0.5, 3.0), F), "float"),
    case(builtins.pow, (F, 3), "int-exponent"),
    case(builtins.pow, (S.arrays(shape=(3,), min_value=0.5), A3), "arrays"),
    case(builtins.pow, (5, 3, 7), "modulus", max_examples=1),
    case(builtins.divmod, (R(2.3, 2.6), R(0.97, 1.0)), "float"),
    case(float.conjugate, (F,), "float"),
    case(complex.conjugate, (C,), "complex"),
    case(builtins.divmod, (S.arrays(shape=(3,), min_value=2.3, max_value=2.6), R(0.97, 1.0)), "array"),
    *NONDIFF,
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


def _pullback(f: Any, *args: Any, ybar: Any = 1.0, **kwargs: Any) -> tuple[Any, ...]:
    y, back = rc.rrule(f, *args, **kwargs)
    return back(ybar)  # type: ignore[no-any-return]


def test_max_of_a_list_gives_the_chosen_element_the_cotangent() -> None:
    assert _pullback(max, [1.0, 3.0, 2.0]) == (rc.NoTangent(), rc.Tangent[list](rc.ZeroTangent(), 1.0,
                                                                                 rc.ZeroTangent()))
    assert _pullback(min, (3.0, 1.0)) == (rc.NoTangent(), rc.Tangent[tuple](rc.ZeroTangent(), 1.0))
    assert _pullback(max, 1.0, 3.0, 2.0) == (rc.NoTangent(), rc.ZeroTangent(), 1.0, rc.ZeroTangent())


def test_max_ties_pick_the_first_like_python() -> None:
    assert _pullback(max, 2.0, 2.0) == (rc.NoTangent(), 1.0, rc.ZeroTangent())
    assert _pullback(min, [1.0, 1.0]) == (rc.NoTangent(), rc.Tangent[list](1.0, rc.ZeroTangent()))


def test_max_with_key_and_default() -> None:
    y, back = rc.rrule(max, [-3.0, 2.0], key=abs)
    assert y == -3.0 and back(1.0)[1] == rc.Tangent[list](1.0, rc.ZeroTangent())
    y, back = rc.rrule(max, [], default=5.0)
    assert y == 5.0 and rc.is_zero(back(1.0)[1])
    with pytest.raises(ValueError):
        rc.rrule(max, [])


def test_max_of_an_array_and_a_generator() -> None:
    bar = _pullback(max, np.array([1.0, 4.0, 2.0]))[1]
    assert np.array_equal(bar, [0.0, 1.0, 0.0])
    # no rule for a generator (or any other iterable): the engine lets Python iterate it, so each
    # element's own operations are differentiated instead of the result being dropped
    assert rc.rrule(max, (v for v in [1.0, 2.0])) is None
    assert rc.rrule(sum, (v for v in [1.0, 2.0])) is None


def test_sum_with_start_and_broadcasting() -> None:
    y, back = rc.rrule(sum, [1.0, np.ones(3)], 2.0)
    _, xs, start = back(np.ones(3))
    assert xs == rc.Tangent[list](3.0, np.ones(3)) and start == 3.0
    assert rc.frule((None, rc.Tangent[list](1.0, 2.0), 0.5), sum, [1.0, 2.0], 0.0)[1] == 3.5


def test_pow_with_modulus_and_divmod() -> None:
    y, back = rc.rrule(pow, 5, 3, 7)
    assert y == 6 and back(1.0) == (rc.NoTangent(),) * 4
    (q, r), back = rc.rrule(divmod, 7.5, 2.0)
    assert (q, r) == (3.0, 1.5)
    assert back(rc.Tangent[tuple](1.0, 1.0)) == (rc.NoTangent(), 1.0, -3.0)
    assert back(rc.Tangent[tuple](1.0, rc.ZeroTangent())) == (rc.NoTangent(), rc.ZeroTangent(),
                                                             rc.ZeroTangent())


def test_complex_parts() -> None:
    assert _pullback(complex, 1.0, 2.0, ybar=3 + 4j) == (rc.NoTangent(), 3.0, 4.0)
    assert _pullback(complex, 1j, 1j, ybar=1 + 0j) == (rc.NoTangent(), 1 + 0j, -1j)
    assert rc.frule((None, 1.0, 2.0), complex, 1.0, 2.0)[1] == 1 + 2j


def test_float_of_arrays_and_strings() -> None:
    bar = _pullback(float, np.array(2.0))[1]
    assert isinstance(bar, np.ndarray) and bar.shape == ()
    assert _pullback(float, np.float32(2.0))[1].dtype == np.float32
    assert _pullback(float, "2.5") == (rc.NoTangent(), rc.NoTangent())


def test_getattr_static_of_a_traced_array_reads_class_attributes() -> None:
    """Libraries probe arguments with inspect.getattr_static (narwhals, under scikit-learn's
    input validation): on a traced array it is answered, and the gradient still flows."""
    import zygotepy as zp

    def probed(x: np.ndarray) -> Any:
        assert inspect.getattr_static(x, "columns", None) is None
        assert inspect.getattr_static(x, "shape", None) is not None
        return np.sum(x ** 2) * (2.0 if inspect.getattr_static(x[0], "imag", None) is not None else 1.0)

    x = np.array([1.0, -2.0])
    np.testing.assert_allclose(zp.gradient(probed, x)[0], 4.0 * x)
    np.testing.assert_allclose(zp.jvp(probed, (x,), (np.ones(2),))[1], np.sum(4.0 * x))
