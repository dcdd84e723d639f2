"""Thread safety (context-local traces) and very deep programs (iterative backward pass)."""

import threading

import numpy as np
import pytest

import rulescore as rc
import zygotepy as zp


def test_concurrent_gradients_do_not_interfere():
    results = {}
    barrier = threading.Barrier(4)

    def worker(k):
        barrier.wait()
        out = []
        for _ in range(50):
            out.append(zp.gradient(lambda x: x ** 2 * k, float(k))[0])
        results[k] = out

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(1, 5):
        assert results[k] == [2.0 * k * k] * 50


@pytest.mark.parametrize(("checks", "length"), [(False, 1_000_000), (True, 100_000)],
                         ids=["unchecked-1e6", "checked-1e5"])
def test_million_operation_chain(checks, length):
    """A tape of a million operations (the users' default, checking mode off); with checking mode on
    (which checks every operation's rule: 26 s for a million) a tenth of it, as deep for the stack."""
    def chain(x):
        y = x
        for _ in range(length):
            y = y + 1e-6
        return y * 1.0

    with rc.checking(checks):
        val, (g,) = zp.withgradient(chain, 0.5)
    assert abs(val - (0.5 + 1e-6 * length)) < 1e-6 and g == 1.0


def test_deep_recursion_within_python_limits():
    def power(x, n):
        return 1.0 if n == 0 else x * power(x, n - 1)

    assert zp.gradient(power, 1.0, 100)[0] == 100.0
    (g,) = zp.gradient(lambda v: np.sum(v ** 2), np.arange(3.0))
    np.testing.assert_allclose(g, 2 * np.arange(3.0))
