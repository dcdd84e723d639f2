"""Config-aware rules: ``register(f, config=...)``, ``rrule(config, f, ...)`` and calling back
into the running AD system with ``rrule_via_ad`` / ``frule_via_ad``."""

import numpy as np
import pytest

import rulescore as rc


class ToyAD(rc.RuleConfig, rc.HasReverseMode, rc.HasForwardsMode):
    """A toy AD system: uses rules where there are some, central differences otherwise."""

    def __init__(self):
        self.via_ad_calls = []

    def rrule_via_ad(self, f, *args, **kwargs):
        self.via_ad_calls.append(f)
        found = rc.rrule(self, f, *args, **kwargs)
        if found is not None:
            return found
        y = f(*args, **kwargs)

        def numeric_pullback(ybar):
            h = 1e-6
            grads = []
            for i, a in enumerate(args):
                up = list(args)
                down = list(args)
                up[i], down[i] = a + h, a - h
                grads.append(ybar * (f(*up, **kwargs) - f(*down, **kwargs)) / (2 * h))
            return (rc.NoTangent(), *grads)

        return y, numeric_pullback

    def frule_via_ad(self, tangents, f, *args, **kwargs):
        self.via_ad_calls.append(f)
        found = rc.frule(self, tangents, f, *args, **kwargs)
        if found is not None:
            return found
        h = 1e-6
        x, xdot = args[0], tangents[1]
        return f(*args), xdot * (f(x + h) - f(x - h)) / (2 * h)


class ForwardOnly(rc.RuleConfig, rc.NoReverseMode, rc.HasForwardsMode):
    pass


# A higher-order function whose rule differentiates the user's function through the config.
def map_sum(g, xs):
    return sum(g(x) for x in xs)


@rc.rrule.register(map_sum, config=rc.HasReverseMode)
def map_sum_rrule(config, g, xs):
    results = [rc.rrule_via_ad(config, g, x) for x in xs]
    y = sum(r[0] for r in results)

    def map_sum_pullback(ybar):
        return rc.NoTangent(), rc.NoTangent(), tuple(back(ybar)[1] for _, back in results)

    return y, map_sum_pullback


@rc.frule.register(map_sum, config=rc.HasForwardsMode)
def map_sum_frule(config, tangents, g, xs):
    _, _, xdots = tangents
    outs = [rc.frule_via_ad(config, (rc.NoTangent(), xd), g, x) for x, xd in zip(xs, xdots, strict=True)]
    return sum(o[0] for o in outs), sum(o[1] for o in outs)


def cube(x):
    return x**3


@rc.rrule.register(cube)
def cube_rrule(x):
    return cube(x), lambda ybar: (rc.NoTangent(), 3 * x**2 * ybar)


def no_rule_square(x):
    return x * x


def test_config_rule_receives_the_config_and_calls_back_into_it():
    ad = ToyAD()
    y, back = rc.rrule(ad, map_sum, cube, (1.0, 2.0))
    assert y == 9.0
    assert ad.via_ad_calls == [cube, cube]
    fbar, gbar, xsbar = back(1.0)
    assert xsbar == (3.0, 12.0)  # from cube's own rule, found by the toy AD system


def test_rrule_via_ad_reaches_functions_without_rules():
    ad = ToyAD()
    y, back = rc.rrule(ad, map_sum, no_rule_square, (1.0, 3.0))
    assert y == 10.0
    np.testing.assert_allclose(back(2.0)[2], (4.0, 12.0), rtol=1e-6)


def test_rrule_without_a_config_skips_config_rules():
    assert rc.rrule(map_sum, cube, (1.0,)) is None


def test_config_rule_needs_the_capability():
    assert rc.rrule(ForwardOnly(), map_sum, cube, (1.0,)) is None
    assert rc.rrule(rc.RuleConfig(), map_sum, cube, (1.0,)) is None


def test_config_is_passed_through_to_the_rule_as_first_argument():
    seen = []

    def probe(x):
        return x

    @rc.rrule.register(probe, config=rc.HasReverseMode)
    def _(config, x):
        seen.append(config)
        return x, lambda ybar: (rc.NoTangent(), ybar)

    ad = ToyAD()
    rc.rrule(ad, probe, 1.0)
    assert seen == [ad]


def test_frule_with_a_config_calls_frule_via_ad():
    ad = ToyAD()
    y, ydot = rc.frule(ad, (rc.NoTangent(), rc.NoTangent(), (1.0, 0.5)), map_sum, no_rule_square, (1.0, 2.0))
    assert y == 5.0
    assert ydot == pytest.approx(2 * 1.0 * 1.0 + 2 * 2.0 * 0.5, rel=1e-6)
    assert ad.via_ad_calls == [no_rule_square, no_rule_square]
    assert rc.frule((None, None, (1.0,)), map_sum, cube, (1.0,)) is None


def test_config_rule_beats_plain_rule_for_the_same_types():
    def f(x):
        return x

    rc.rrule.register(f, float)(lambda x: ("plain", lambda d: (rc.NoTangent(), d)))
    rc.rrule.register(f, float, config=rc.HasReverseMode)(
        lambda cfg, x: ("config", lambda d: (rc.NoTangent(), d)))
    assert rc.rrule(ToyAD(), f, 1.0)[0] == "config"
    assert rc.rrule(ForwardOnly(), f, 1.0)[0] == "plain"  # capability missing: plain rule
    assert rc.rrule(f, 1.0)[0] == "plain"


def test_dispatch_cache_distinguishes_configs():
    def f(x):
        return x

    rc.rrule.register(f)(lambda x: ("plain", lambda d: (rc.NoTangent(), d)))
    rc.rrule.register(f, config=rc.HasReverseMode)(lambda cfg, x: ("config", lambda d: (rc.NoTangent(), d)))
    for _ in range(2):  # the second round is served from the cache
        assert rc.rrule(f, 1.0)[0] == "plain"
        assert rc.rrule(ToyAD(), f, 1.0)[0] == "config"
        assert rc.rrule(ForwardOnly(), f, 1.0)[0] == "plain"


def test_general_config_rule_and_specific_plain_rule_are_ambiguous():
    # Neither is more specific than the other, so the registry refuses to guess.
    def f(x):
        return x

    rc.rrule.register(f, float)(lambda x: ("plain", lambda d: (rc.NoTangent(), d)))
    rc.rrule.register(f, object, config=rc.HasReverseMode)(
        lambda cfg, x: ("config", lambda d: (rc.NoTangent(), d)))
    with pytest.raises(rc.AmbiguousRuleError):
        rc.rrule(ToyAD(), f, 1.0)
    assert rc.rrule(ToyAD(), f, "s")[0] == "config"
    assert "config=HasReverseMode" in rc.rrule.explain(f, "s", config=ToyAD())


def test_base_config_has_no_ad_system_to_call():
    with pytest.raises(TypeError, match="no reverse mode"):
        rc.rrule_via_ad(rc.RuleConfig(), cube, 1.0)
    with pytest.raises(TypeError, match="no forward mode"):
        rc.frule_via_ad(rc.RuleConfig(), (None, 1.0), cube, 1.0)
    assert repr(ToyAD()) == "ToyAD()"


def test_via_ad_forwards_keyword_arguments():
    class Recorder(rc.RuleConfig, rc.HasReverseMode):
        def rrule_via_ad(self, f, *args, **kwargs):
            return f, args, kwargs

    assert rc.rrule_via_ad(Recorder(), cube, 1.0, k=2) == (cube, (1.0,), {"k": 2})
