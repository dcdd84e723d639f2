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
