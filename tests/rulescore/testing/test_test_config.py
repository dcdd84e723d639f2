"""rct.TestConfig: rules that take a RuleConfig and call rrule_via_ad / frule_via_ad are tested with
no AD engine: registered rules where they apply, finite differences where not."""

from __future__ import annotations

import numpy as np
import pytest

import rulescore as rc
import rulescore.testing as rct

X = np.array([0.3, -0.5, 1.2])


def apply_twice(g, x):
    return g(g(x))


@rc.rrule.register(apply_twice, config=rc.HasReverseMode)
def apply_twice_rrule(config, g, x):
    y1, back1 = rc.rrule_via_ad(config, g, x)
    y2, back2 = rc.rrule_via_ad(config, g, y1)

    def apply_twice_pullback(ybar):
        return rc.NoTangent(), rc.NoTangent(), back1(back2(ybar)[1])[1]

    return y2, apply_twice_pullback


@rc.frule.register(apply_twice, config=rc.HasForwardsMode)
def apply_twice_frule(config, tangents, g, x):
    _, _, xdot = tangents
    y1, d1 = rc.frule_via_ad(config, (rc.NoTangent(), xdot), g, x)
    return rc.frule_via_ad(config, (rc.NoTangent(), d1), g, y1)


def cube(x):
    """No rule: TestConfig's finite differences stand in."""
    return x ** 3


def scaled_softplus(x):
    return 2.0 * np.log1p(np.exp(x))


def map_sum(g, xs):
    return sum(g(x) for x in xs)


@rc.rrule.register(map_sum, config=rc.HasReverseMode)
def map_sum_rrule(config, g, xs):
    results = [rc.rrule_via_ad(config, g, x) for x in xs]

    def map_sum_pullback(ybar):
        return rc.NoTangent(), rc.NoTangent(), rc.Tangent[tuple](*(back(ybar)[1] for _, back in results))

    return sum(y for y, _ in results), map_sum_pullback


def forgets_the_inner_factor(g, x):
    return g(g(x))


@rc.rrule.register(forgets_the_inner_factor, config=rc.HasReverseMode)
def forgets_the_inner_factor_rrule(config, g, x):
    y1, back1 = rc.rrule_via_ad(config, g, x)
    y2, back2 = rc.rrule_via_ad(config, g, y1)
    return y2, lambda ybar: (rc.NoTangent(), rc.NoTangent(), back2(ybar)[1])  # wrong: back1 dropped


@pytest.mark.parametrize("g", [np.sin, np.tanh, cube, scaled_softplus], ids=lambda g: g.__name__)
@pytest.mark.parametrize("x", [X, 0.7], ids=["array", "float"])
def test_config_rules_with_and_without_inner_rules(g, x) -> None:
    rct.test_rrule(apply_twice, rct.no_tangent(g), x)
    rct.test_frule(apply_twice, rct.no_tangent(g), x)


def test_a_structured_argument() -> None:
    rct.test_rrule(map_sum, rct.no_tangent(cube), (0.5, -1.5, 2.0))
    rct.test_rrule(map_sum, rct.no_tangent(np.sin), (X, 2 * X))


def test_a_wrong_config_rule_is_caught() -> None:
    with pytest.raises(AssertionError, match="disagrees with finite differences"):
        rct.test_rrule(forgets_the_inner_factor, rct.no_tangent(cube), X)


def test_an_explicit_config_and_its_finite_differences() -> None:
    config = rct.TestConfig(fd=rct.FiniteDifferences(step=0.05))
    rct.test_rrule(apply_twice, rct.no_tangent(cube), X, config=config)
    y, back = config.rrule_via_ad(cube, X)
    np.testing.assert_allclose(back(np.ones(3))[1], 3 * X ** 2, rtol=1e-9)
    assert back(rc.ZeroTangent())[1] == rc.ZeroTangent()
    _, ydot = config.frule_via_ad((rc.NoTangent(), np.ones(3)), cube, X)
    np.testing.assert_allclose(ydot, 3 * X ** 2, rtol=1e-9)
    _, back_sin = config.rrule_via_ad(np.sin, X)  # a registered rule: used as it is
    np.testing.assert_allclose(back_sin(np.ones(3))[1], np.cos(X), rtol=1e-15)
    assert isinstance(config, rc.HasReverseMode) and isinstance(config, rc.HasForwardsMode)
