"""Scenarios: Python code that Python runs from C, through descriptors and hooks (issue 14,
case 5): properties, ``functools.cached_property``, ``__getattr__`` and dataclass
``__post_init__``, with implicit parameters (``zp.params``) and with explicit arguments; checked
against finite differences."""

import dataclasses
import functools
import math

import numpy as np
import pytest

import rulescore as rc
import zygotepy as zp
from tests.zygotepy.finite_differences import fd


class Model:
    def __init__(self, W):
        self.W = W

    @property
    def doubled(self):
        return self.W * 2.0

    @functools.cached_property
    def squashed(self):
        return np.tanh(self.W)

    def __getattr__(self, name):
        if name == "cubed":
            return self.W ** 3
        raise AttributeError(name)


@dataclasses.dataclass
class Scaled:
    a: np.ndarray
    scale: dataclasses.InitVar[float] = 2.0

    def __post_init__(self, scale):
        self.b = np.sin(self.a) * scale


X = np.array([0.3, -0.7, 1.1])
READS = {
    "property": lambda m: m.doubled,
    "cached_property": lambda m: m.squashed,
    "__getattr__": lambda m: m.cubed,
}


@pytest.mark.parametrize("how", list(READS))
def test_implicit_parameter_read_by_a_descriptor(how):
    W = X.copy()
    model = Model(W)
    read = READS[how]
    gs = zp.gradient(lambda: np.sum(read(model) * X), zp.params(W))
    np.testing.assert_allclose(gs[W], fd(lambda w: np.sum(read(Model(w)) * X), X), rtol=1e-6)
    assert "squashed" not in vars(model)  # no traced value left in a cache


@pytest.mark.parametrize("how", list(READS))
def test_explicit_argument_read_by_a_descriptor(how):
    read = READS[how]
    (g,) = zp.gradient(lambda m: np.sum(read(m) * X), Model(X.copy()))
    assert isinstance(g, rc.Tangent)
    np.testing.assert_allclose(g.W, fd(lambda w: np.sum(read(Model(w)) * X), X), rtol=1e-6)


def test_filled_cached_property_sends_the_gradient_to_its_field():
    model = Model(X.copy())
    cached = model.squashed  # the cache is filled before differentiating
    (g,) = zp.gradient(lambda m: np.sum(m.squashed), model)
    np.testing.assert_allclose(g.W, 1 - np.tanh(X) ** 2)
    assert g.squashed is None  # nothing sent to the cache field
    assert model.squashed is cached  # the user's cache is untouched


def test_dataclass_post_init_with_init_only_values():
    W = X.copy()
    gs = zp.gradient(lambda: np.sum(Scaled(W, 3.0).b), zp.params(W))
    np.testing.assert_allclose(gs[W], 3.0 * np.cos(X))
    (g,) = zp.gradient(lambda a: np.sum(Scaled(a).b), X)
    np.testing.assert_allclose(g, 2.0 * np.cos(X))
    made = Scaled(X)
    assert type(made) is Scaled and made.b.shape == (3,)


@dataclasses.dataclass(frozen=True)
class Circle:
    area: float
    radius: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "radius", math.sqrt(self.area / math.pi))


def test_frozen_dataclass_post_init_using_math_sqrt():
    (g,) = zp.gradient(lambda a: Circle(a).radius, 2.0)
    assert g == pytest.approx(fd(lambda a: Circle(a).radius, 2.0), rel=1e-6)
