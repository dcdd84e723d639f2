"""Seeing how each call is differentiated (the "zygotepy" logger, ``zp.explain``), and engine
warnings pointing at the user's line."""

import logging
import warnings

import numpy as np

import zygotepy as zp
from zygotepy._reverse import ReverseTrace
from zygotepy._trace import new_trace


def scaled(x):
    return 3.0 * x


def clipped(x):
    return x


@zp.adjoint(clipped)
def _clipped_adjoint(x):
    return clipped(x), lambda ybar: (np.clip(ybar, -1.0, 1.0),)


def loss(w, x):
    return np.sum(np.tanh(scaled(w) * x)) + float(np.argmax(x)) + clipped(w)[0]


def test_explain_names_rule_adjoint_traced_through_and_non_differentiable(capsys):
    zp.explain(loss, np.ones(2), np.array([1.0, 2.0]))
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert "traced through" in rows["tests.zygotepy.test_explain.loss(ndarray,"]
    assert "traced through" in rows["tests.zygotepy.test_explain.scaled(ndarray)"]
    assert "<rrule(numpy.tanh) at" in rows["numpy.tanh(ndarray)"]
    assert "non-differentiable" in rows["numpy.argmax(ndarray)"]
    assert "adjoint" in rows["tests.zygotepy.test_explain.clipped(ndarray)"]


def test_debug_logger_gets_one_record_per_call(caplog):
    with caplog.at_level(logging.DEBUG, logger="zygotepy"):
        g, = zp.gradient(lambda w: np.sum(np.sin(w)), np.array([0.5]))
    calls = [r.zygotepy_call for r in caplog.records if r.name == "zygotepy"]
    assert "numpy.sin(ndarray)" in calls and "numpy.sum(ndarray)" in calls
    np.testing.assert_allclose(g, np.cos([0.5]))  # the logged (slow) path gives the same answer


def test_logging_off_keeps_the_fast_path_and_emits_nothing(caplog):
    with caplog.at_level(logging.INFO, logger="zygotepy"):
        with new_trace(ReverseTrace) as trace:
            assert trace.log is None and trace.fast_path is not None
        zp.gradient(lambda w: np.sum(np.sin(w)), np.array([0.5]))
    assert not [r for r in caplog.records if r.name == "zygotepy"]


def test_engine_warning_points_at_the_users_line():
    namespace = {"np": np}
    exec("def no_source(x):\n    return np.sin(x)\n", namespace)  # no source file to rewrite from
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        zp.gradient(namespace["no_source"], 1.0)  # the warning's line
    ours = [w for w in caught if issubclass(w.category, zp.ZygoteWarning)]
    assert ours, "expected a ZygoteWarning for a function without source"
    assert ours[0].filename == __file__


class Model:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return np.sum(scaled(self.w) * x[0])


def test_explain_source_prints_the_rewritten_function(capsys):
    """``source=True`` shows what runs under differentiation (Zygote's ``@code_adjoint``): every
    call, operator and subscript routed through the dispatcher's helpers."""
    zp.explain(loss, source=True)
    out = capsys.readouterr().out
    assert "def loss(w, x):" in out and "_zp_call(np.sum" in out and "_zp_call(scaled, w)" in out
    assert "_zp_op_mul" in out and "_zp_getitem" in out and "call..." not in out  # no table without args
    zp.explain(Model(np.ones(2)).__call__, source=True)
    assert "def __call__(self, x):" in capsys.readouterr().out
    zp.explain(lambda v: v * 2.0, source=True)
    assert "lambda v: _zp_call(_zp_op_mul, v, 2.0)" in capsys.readouterr().out


def test_explain_source_with_arguments_prints_source_then_table(capsys):
    zp.explain(loss, np.ones(2), np.array([0.5, 2.0]), source=True)
    out = capsys.readouterr().out
    assert out.index("def loss(w, x):") < out.index("traced through") and "rule" in out


def test_explain_source_says_when_there_is_nothing_to_rewrite(capsys):
    zp.explain(np.sin, source=True)
    assert "not rewritten: it is not a Python function" in capsys.readouterr().out
    namespace: dict = {}
    exec("def f(x):\n    return x * 2\n", namespace)
    zp.explain(namespace["f"], source=True)
    assert "not rewritten: it has no Python source" in capsys.readouterr().out


def test_the_registry_and_explain_tell_how_calls_without_rules_are_handled(capsys):
    """Every kind of handling is an entry of rulescore's one registry, which rc.rrule.explain
    reports and by which zp.explain labels the calls."""
    import rulescore as rc

    assert rc.rrule.handled[sorted].kind == "special_form"
    assert rc.rrule.handled[list.append].kind == "reference"
    assert rc.rrule.handled[rc.project].kind == "pass_through"
    assert {e.kind for e in rc.rrule.handled.values()} <= rc.HANDLING_KINDS
    assert "special form" in rc.rrule.explain(map, len, [1.0])
    assert "reference" in rc.rrule.explain(dict.get, {}, "k")

    def model(w):
        parts = []
        parts.append(w * 2.0)
        return sum(sorted(parts, key=lambda v: float(np.sum(v))))[0]

    zp.explain(model, np.ones(2))
    rows = capsys.readouterr().out.splitlines()
    assert any(r.startswith("sorted(list)") and "special form" in r for r in rows)
    assert any("list.append(" in r and "reference" in r for r in rows)
    assert zp.gradient(model, np.ones(2))[0].tolist() == [2.0, 0.0]


def test_a_legacy_adjoint_applies_where_the_reverse_level_owns_the_argument():
    """Forward over reverse where only the outer (reverse) level traces the adjoint's argument:
    the adjoint, which takes priority over rules, is applied by the reverse trace."""
    def outer(w):
        _, tangent = zp.jvp(lambda t: clipped(w) * t, (1.0,), (1.0,))  # t forward, w reverse
        return np.sum(tangent)

    big = np.array([3.0, -5.0])
    # clipped's adjoint clips the cotangent to [-1, 1]; its plain derivative would give 1
    assert zp.gradient(outer, big)[0].tolist() == [1.0, 1.0]
    assert zp.gradient(lambda w: np.sum(clipped(w) * 4.0), big)[0].tolist() == [1.0, 1.0]
