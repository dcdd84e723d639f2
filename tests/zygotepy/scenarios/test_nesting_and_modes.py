"""Scenarios: nested differentiation and mixed modes (Hessians, jacobians inside gradients,
dropgrad in forward mode, checkpointing under forward mode)."""

import math

import autograd
import autograd.numpy as anp
import numpy as np
import pytest

import rulescore as rc
import zygotepy as zp


def test_nested_gradients_without_perturbation_confusion():
    assert zp.gradient(lambda x: x * zp.gradient(lambda y: x + y, 1.0)[0], 3.0) == (1.0,)
    x0 = np.array([0.5, -1.0])
    got = zp.gradient(lambda x: np.sum(zp.gradient(lambda y: np.dot(x, y) ** 2, np.ones(2))[0]), x0)[0]
    want = autograd.grad(lambda x: anp.sum(autograd.grad(lambda y: anp.dot(x, y) ** 2)(np.ones(2))))(x0)
    np.testing.assert_allclose(got, want)
    assert zp.jvp(lambda x: x * zp.jvp(lambda y: x + y, (1.0,), (1.0,))[1], (3.0,), (1.0,))[1] == 1.0


def test_hessians_of_python_programs():
    def prog(v, np_=np):
        s = 0.0
        for i in range(len(v)):
            s = s + (v[i] ** 3 if v[i] > 0 else np_.exp(v[i]))
        return s * np_.sum(v ** 2)

    x = np.array([0.3, -0.7, 1.1])
    want = autograd.hessian(lambda v: prog(v, anp))(x)
    np.testing.assert_allclose(zp.hessian(prog, x), want, rtol=1e-6)
    np.testing.assert_allclose(zp.hessian_reverse(prog, x), want, rtol=1e-6)


def test_checkpointed_hook_and_rule_registered_after_first_call():
    x = np.array([0.3, -0.7])
    (g,) = zp.gradient(lambda v: zp.checkpointed(lambda u: np.sum(np.sin(u) * 2), v), x)
    np.testing.assert_allclose(g, 2 * np.cos(x))
    assert zp.gradient(lambda a: zp.gradient(lambda b: zp.checkpointed(lambda u: u ** 3, b), a)[0], 0.3)[0] \
        == pytest.approx(6 * 0.3)
    assert zp.gradient(lambda a, b: zp.hook(lambda g: -g, a) * b, 2.0, 3.0) == (-3.0, 2.0)

    def my_fn(v):
        return v ** 2

    def model(v):
        return my_fn(v) * 2

    assert zp.gradient(model, 3.0) == (12.0,)
    rc.rrule.register(my_fn)(lambda v: (my_fn(v), lambda yb: (rc.NoTangent(), yb * 100.0)))
    assert zp.gradient(model, 3.0) == (200.0,)


def test_dropgrad_in_forward_mode_matches_reverse_mode():
    x = np.array([0.7, 1.2])
    f = lambda v: zp.dropgrad(v) * v  # noqa: E731
    (j_rev,) = zp.jacobian(f, x, mode="reverse")
    np.testing.assert_allclose(j_rev, np.diag(x))
    (j_fwd,) = zp.jacobian(f, x, mode="forward")
    np.testing.assert_allclose(j_fwd, np.diag(x))
    assert zp.jvp(lambda v: zp.dropgrad(v) * v, (0.7,), (1.0,))[1] == pytest.approx(0.7)


def test_dropgrad_is_a_constant_at_every_level_like_ignore_derivatives():
    x = np.array([0.7, 1.2])
    want = zp.hessian_reverse(lambda v: np.sum(rc.ignore_derivatives(v) * v ** 2), x)
    np.testing.assert_allclose(want, np.diag(2 * x))
    np.testing.assert_allclose(zp.hessian_reverse(lambda v: np.sum(zp.dropgrad(v) * v ** 2), x), want)


def test_jacobian_inside_gradient_keeps_the_closure_gradient():
    x0 = np.array([0.5, -1.0])
    (g,) = zp.gradient(lambda x: np.sum(zp.jacobian(lambda y: y * x, np.ones(2))[0]), x0)
    np.testing.assert_allclose(g, np.ones(2))


def test_hessian_inside_gradient_keeps_the_closure_gradient():
    x0 = np.array([0.3, 0.4])
    (g,) = zp.gradient(lambda a: np.trace(zp.hessian(lambda v: a * np.sum(v ** 3), x0)), 2.0)
    assert g == pytest.approx(np.sum(6 * x0))


def test_withgradient_result_indexed_inside_outer_gradient():
    (g,) = zp.gradient(lambda x: zp.withgradient(lambda y: y * y * x, x)[1][0], 3.0)
    assert g == pytest.approx(4 * 3.0)


def test_checkpointed_under_forward_mode():
    assert zp.jvp(lambda a: zp.checkpointed(math.sin, a), (0.3,), (1.0,))[1] == pytest.approx(math.cos(0.3))
    x = np.array([0.3, 0.4])
    (j,) = zp.jacobian(lambda a: zp.checkpointed(np.sin, a), x, mode="forward")
    np.testing.assert_allclose(j, np.diag(np.cos(x)))


def test_nested_ad_emits_no_spurious_warning(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "nested_warning.py"
    script.write_text(
        "import warnings, numpy as np, zygotepy as zp\n"
        "warnings.simplefilter('error', zp.ZygoteWarning)\n"
        "def f(v):\n"
        "    return np.sum(zp.dropgrad(v) * v ** 2)\n"
        "zp.hessian(f, np.array([0.7, 1.2]))\n")
    # a fresh process: warnings are once per code object and the environment is read once
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr.strip().splitlines()[-1]
