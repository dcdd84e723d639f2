"""Scenarios: random numbers inside ``zp.checkpointed`` (issue 14, case 7). The recomputation in
the backward pass must draw what the forward pass drew, from every source the region used;
checked against finite differences with the sources rewound for each evaluation."""

import numpy as np
import pytest

import zygotepy as zp

RNG = np.random.default_rng(0)  # a module-level generator, captured as a global


class Dropout:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)  # reached through self

    def __call__(self, h):
        return np.tanh(h) * (self.rng.random(h.shape) > 0.5)


def noisy_layer(h, rng):
    keep = rng.random(h.shape) > 0.3  # a generator passed as an argument
    return np.tanh(h) * keep * RNG.normal(size=h.shape) * np.random.rand(*h.shape)


def _states(sources):
    return [s.bit_generator.state for s in sources], np.random.get_state()


def _rewind(sources, states):
    for s, st in zip(sources, states[0], strict=True):
        s.bit_generator.state = st
    np.random.set_state(states[1])


def _check(loss, x, sources):
    before = _states(sources)
    (g,) = zp.gradient(loss, x)
    after = _states(sources)
    fd = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = 1e-6
        _rewind(sources, before)
        up = loss(x + e)
        _rewind(sources, before)
        fd[i] = (up - loss(x - e)) / 2e-6
    _rewind(sources, after)
    np.testing.assert_allclose(g, fd, atol=1e-6)
    return g


X = np.linspace(0.1, 1.0, 8)


def test_generator_passed_as_an_argument_and_global_sources():
    rng = np.random.default_rng(5)
    _check(lambda v: np.sum(zp.checkpointed(noisy_layer, v, rng)), X, [rng, RNG])


def test_generator_held_by_a_callable_object():
    drop = Dropout(1)
    g = _check(lambda v: np.sum(zp.checkpointed(drop, v)), X, [drop.rng])
    assert np.count_nonzero(g) not in (0, X.size)  # the mask was really random


def test_nested_checkpoints_share_a_captured_generator():
    rng = np.random.default_rng(7)

    def outer(u):
        return zp.checkpointed(noisy_layer, u, rng) + zp.checkpointed(noisy_layer, u * 2, rng)

    _check(lambda v: np.sum(zp.checkpointed(outer, v)), X, [rng, RNG])


def test_generators_are_returned_to_where_they_were_after_the_backward_pass():
    rng = np.random.default_rng(3)
    zp.gradient(lambda v: np.sum(zp.checkpointed(noisy_layer, v, rng)), X)
    fresh = np.random.default_rng(3)
    fresh.random(X.shape)
    assert rng.bit_generator.state == fresh.bit_generator.state


def test_a_recomputation_that_differs_is_refused():
    rng = np.random.default_rng(0)
    namespace = {"rng": rng, "np": np}
    exec("def layer(h):\n    return np.tanh(h) * (rng.random(h.shape) > 0.5)", namespace)  # no source
    with pytest.warns(zp.ZygoteWarning), pytest.raises(
            zp.UntraceableError, match="recomputing layer .* gave another result"):
        zp.gradient(lambda v: np.sum(zp.checkpointed(namespace["layer"], v)), X)
