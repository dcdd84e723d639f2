"""The Zygote surface: @adjoint semantics, hooks, checkpointing, reflection, compatibility names."""

import math
import sys
import tracemalloc
import warnings

import numpy as np
import pytest

import zygotepy as zp


def test_hook_showgrad_dropgrad_ignore(capsys):
    assert zp.gradient(lambda a: zp.hook(lambda g: 10 * g, a) * 2, 1.0) == (20.0,)
    zp.gradient(lambda a: zp.showgrad(a) * 4.0, 1.0)
    assert capsys.readouterr().out.strip() == "∂(a) = 4.0"
    assert zp.gradient(lambda a: a * zp.dropgrad(a), 3.0) == (3.0,)
    log = []
    assert zp.gradient(lambda a: a * zp.ignore(lambda: log.append(1) or 2.0), 3.0) == (2.0,)
    assert log == [1]


def _model(x, w):
    h = zp.showgrad(x * w)
    return zp.showgrad(np.sum(h ** 2)) + zp.showgrad(w[0]) + zp.showgrad(
        w[1], "second weight")


def test_showgrad_labels_each_value_by_its_expression(capsys):
    """Without a name, each printed gradient is labelled by the argument's source text (Zygote's
    ``@showgrad``), inside functions, lambdas and across lines, not by a fixed letter."""
    gx, gw = zp.gradient(_model, np.ones(2), np.array([1.0, 2.0]))
    out = capsys.readouterr().out.splitlines()
    assert out == ["∂(second weight) = 1.0", "∂(w[0]) = 1.0", "∂(np.sum(h ** 2)) = 1.0", "∂(x * w) = [2. 4.]"]
    np.testing.assert_allclose(gx, [2.0, 8.0])
    zp.gradient(lambda a, b: zp.showgrad(a) * zp.showgrad(
        b * 2.0), 1.0, 3.0)
    assert sorted(capsys.readouterr().out.splitlines()) == ["∂(a) = 6.0", "∂(b * 2.0) = 1.0"]


def test_showgrad_without_an_argument_expression_labels_by_file_and_line(capsys):
    """Passed to gradient itself, showgrad has no argument text at a call: the label is the call site."""
    line = sys._getframe().f_lineno + 1
    assert zp.gradient(zp.showgrad, 2.0) == (1.0,)
    assert capsys.readouterr().out.strip() == f"∂(test_lib.py:{line}) = 1.0"


def test_isderiving_refresh_and_forward_alias():
    assert zp.isderiving() is False
    assert zp.gradient(lambda x: x * (3.0 if zp.isderiving() else 1.0), 1.0) == (3.0,)
    assert zp.refresh() is None
    with pytest.warns(DeprecationWarning):
        y, back = zp.forward(math.sin, 0.0)
    assert back(1.0) == (1.0,)


def test_checkpointed_gradient_side_effects_and_random_state(capsys):
    calls = []

    def layer(h):
        calls.append(1)
        noise = np.random.normal(size=h.shape)  # impure but seeded: same numbers on recompute
        return np.tanh(h + noise)

    x = np.linspace(-1, 1, 4)
    np.random.seed(0)
    g_ckpt = zp.gradient(lambda v: np.sum(zp.checkpointed(layer, v)), x)[0]
    assert len(calls) == 2  # forward, then recomputed in the backward pass
    np.random.seed(0)
    g_plain = zp.gradient(lambda v: np.sum(layer(v)), x)[0]
    np.testing.assert_allclose(g_ckpt, g_plain)


def test_checkpointed_keeps_parameter_gradients():
    W = np.array([[0.5, -1.0], [2.0, 0.1]])
    x = np.array([0.3, 0.7])
    ps = zp.params(W)
    g1 = zp.gradient(lambda: np.sum(zp.checkpointed(lambda v: np.tanh(W @ v), x)), ps)
    g2 = zp.gradient(lambda: np.sum(np.tanh(W @ x)), ps)
    np.testing.assert_allclose(g1[W], g2[W])


def test_checkpointed_refuses_captured_traced_values():
    with pytest.raises(zp.UntraceableError, match="not active"):
        zp.gradient(lambda a, b: zp.checkpointed(lambda v: v * b, a), 1.0, 2.0)


def test_checkpointing_reduces_peak_memory():
    Ws = [np.random.default_rng(i).normal(size=(64, 64)) / 8 for i in range(16)]
    x = np.ones((256, 64))

    def block(h, W):
        for _ in range(4):
            h = np.tanh(h @ W)
        return h

    def loss(v, checkpoint):
        h = v
        for W in Ws:
            h = zp.checkpointed(block, h, W) if checkpoint else block(h, W)
        return np.sum(h)

    peaks = []
    for checkpoint in (False, True):
        tracemalloc.start()
        g = zp.gradient(loss, x, checkpoint)[0]
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert g.shape == x.shape
    assert peaks[1] < peaks[0] / 2, peaks


def test_forward_alias_is_pullback_with_warning():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        zp.forward(lambda x: x, 1.0)
    assert any(issubclass(x.category, DeprecationWarning) for x in w)


def test_recursive_checkpointing_keeps_memory_logarithmic_and_gradients_exact():
    Ws = [np.random.default_rng(i).normal(size=(128, 128)) / 11 for i in range(32)]
    x = np.random.default_rng(99).normal(size=(256, 128))  # one activation: 256 KiB

    def chain(h, ws):
        for W in ws:
            h = np.tanh(h @ W)
        return h

    def halves(h, ws):
        if len(ws) <= 2:
            return chain(h, ws)
        mid = len(ws) // 2
        return zp.checkpointed(halves, zp.checkpointed(halves, h, ws[:mid]), ws[mid:])

    def peak(loss):
        tracemalloc.start()
        try:
            g = zp.gradient(loss, x)[0]
            return g, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    g_plain, plain = peak(lambda v: np.sum(chain(v, Ws)))
    g_nested, nested = peak(lambda v: np.sum(halves(v, Ws)))
    np.testing.assert_allclose(g_nested, g_plain, rtol=1e-12, atol=1e-14)
    # 32 activations kept without checkpointing; about log2(32) levels of them with it
    assert nested < plain / 3, (nested, plain)


# -- writes inside a checkpointed function -----------------------------------------------------------
def test_a_checkpointed_write_of_a_traced_value_is_refused_rather_than_lost():
    buffer = np.zeros(2)

    def keeps(h):
        buffer[...] = h
        return np.sum(h * h)

    def keeps_a_part(h):
        buffer[0] = h[1] * 2.0
        return np.sum(h)

    def adds(h):
        buffer[...] += np.sin(h)
        return np.sum(h)

    for f in (keeps, keeps_a_part, adds):
        refused = rf"checkpointed: .*{f.__name__} writes .*Return the value"
        with pytest.raises(zp.UntraceableError, match=refused):
            zp.gradient(lambda x: zp.checkpointed(f, x), np.array([1.0, 2.0]))
