"""NumPy and SciPy code without a rule is differentiated through its Python source; traced
keyword arguments bind to their parameters; errors name the library's public objects."""

import contextlib
import io

import numpy as np
import pytest

import zygotepy as zp
from tests.zygotepy.finite_differences import check, fd

scipy = pytest.importorskip("scipy")
import scipy.special as ss  # noqa: E402
import scipy.stats as st  # noqa: E402

X = np.array([0.3, 1.7, -0.8, 2.4])

THROUGH_THE_SOURCE = {
    "diff": lambda x: np.sum(np.diff(x) ** 2),
    "diff n=2": lambda x: np.sum(np.diff(x, n=2) ** 3),
    "piecewise": lambda x: np.sum(np.piecewise(x, [x > 1.0], [lambda v: v ** 2, lambda v: np.sin(v)])),
    "average": lambda x: np.average(x ** 2, weights=np.exp(x)),
    "polyval": lambda x: np.polyval(x, 0.7),
    "r_": lambda x: np.sum(np.r_[x, 2.0 * x, 1.0] ** 2),
    "c_": lambda x: np.sum(np.c_[x, x ** 2] ** 2),
    "trapezoid": lambda x: np.trapezoid(x ** 2),
    "polyint": lambda x: np.sum(np.polyint(x, 2) ** 2),
    "resize": lambda x: np.sum(np.resize(x, (3, 3)) ** 2),
    "polyder": lambda x: np.sum(np.polyder(x, 2) ** 2),
    "median": lambda x: np.median(x ** 2),
    "cov of a vector": lambda x: np.cov(x),  # np.array(m, ndmin=2), then X -= avg in place
    "cov of rows": lambda x: np.sum(np.cov(np.stack([x, x ** 2, np.sin(x)])) ** 2),
    "cov aweights": lambda x: np.sum(np.cov(np.stack([x, x ** 2]), aweights=np.exp(x)) ** 2),
    "corrcoef": lambda x: np.sum(np.corrcoef(np.stack([x, x ** 2, np.sin(x)])) ** 2),
}


@pytest.mark.parametrize("name", sorted(THROUGH_THE_SOURCE))
def test_numpy_functions_without_rules_are_differentiated_through_their_source(name):
    check(THROUGH_THE_SOURCE[name], X)


def test_a_frozen_scipy_distribution_holding_traced_parameters_is_differentiated():
    def loss(p):
        return np.sum(st.norm(p[0], np.exp(p[1])).logpdf(X)) + st.norm(loc=p[0]).cdf(0.5)

    check(loss, np.array([0.2, -0.3]))


def test_library_code_called_on_constants_is_not_traced_through():
    def loss(x):
        grid = np.linspace(0.0, 1.0, 4)  # a Python function of NumPy's, given no traced value
        return np.sum(np.diff(x) * grid[1:])

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        zp.explain(loss, X)
    rows = out.getvalue()
    assert "numpy.linspace(float, float, int)" in rows and "numpy.diff(ndarray)" in rows
    assert "_linspace_dispatcher" not in rows and "isscalar" not in rows  # no call inside linspace
    check(loss, X)


def test_a_rule_takes_precedence_over_the_source():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        zp.explain(lambda x: np.sum(np.cumsum(x)), X)
    cumsum = [line for line in out.getvalue().splitlines() if "numpy.cumsum" in line]
    assert cumsum and all(" rule " in line for line in cumsum)


def test_forward_mode_differentiates_through_library_source():
    f = THROUGH_THE_SOURCE["average"]
    _, tangent = zp.jvp(f, (X,), (np.ones_like(X),))
    np.testing.assert_allclose(tangent, np.sum(fd(f, X)), rtol=1e-6)


KEYWORDS = {
    "norm.logpdf(x, loc=, scale=)": lambda p: np.sum(st.norm.logpdf(X, loc=p[0], scale=p[1])),
    "norm.cdf(x, scale=) (loc's default fills its slot)": lambda p: np.sum(st.norm.cdf(X, scale=p[1])),
    "t.logpdf(x, df=, loc=)": lambda p: np.sum(st.t.logpdf(X, df=p[1] + 2.0, loc=p[0])),
    "gamma.logpdf(x, a=, scale=)": lambda p: np.sum(st.gamma.logpdf(np.abs(X), a=p[1], scale=p[1] * 0.5)),
    "poisson.logpmf(k, mu=)": lambda p: st.poisson.logpmf(3, mu=p[1]),
    "multivariate_normal.logpdf(x, mean=)": lambda p: st.multivariate_normal.logpdf(X[:2], mean=p),
    "logsumexp(a, axis=0, b=)": lambda p: ss.logsumexp(X[:2], axis=0, b=p ** 2),
    "clip(x, a_min=, a_max=)": lambda p: np.sum(np.clip(X, a_min=p[0], a_max=p[1] + 0.5)),
    "average(x, weights=)": lambda p: np.average(X[:2], weights=p ** 2),
}


@pytest.mark.parametrize("name", sorted(KEYWORDS))
def test_traced_keyword_arguments_bind_to_their_parameters(name):
    p = np.array([0.4, 1.3])
    check(KEYWORDS[name], p)
    _, tangent = zp.jvp(KEYWORDS[name], (p,), (np.array([1.0, -1.0]),))
    np.testing.assert_allclose(tangent, fd(KEYWORDS[name], p) @ [1.0, -1.0], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(("call", "name"), [
    (lambda x: ss.struve(1.0, x), "scipy.special.struve"),
    (lambda x: st.f.cdf(x, 4.5, 6.5), "scipy.stats.f.cdf"),
    (lambda x: np.ediff1d(x), "numpy.ediff1d"),
    (lambda x: x.compress([True, False, True, True]), "numpy.ndarray.compress"),
])
def test_errors_name_the_public_object_and_suggest_a_registrable_one(call, name):
    with pytest.raises(zp.UntraceableError) as info:
        zp.gradient(lambda x: np.sum(call(x)), np.abs(X) + 0.5)
    message = str(info.value)
    assert f"@rulescore.rrule.register({name})" in message
    assert "numpy.struve" not in message and "rv_continuous" not in message


def test_an_error_inside_library_source_names_the_function_the_user_called():
    with pytest.raises(zp.UntraceableError, match=r"scipy\.special\.fdtr has no rrule and cannot be "
                       r"differentiated through, but it received a traced value as .*argument 3 inside "
                       r"scipy\.stats\.f\.cdf"):
        zp.gradient(lambda x: np.sum(st.f.cdf(x, 4.5, 6.5)), np.abs(X) + 0.5)


def test_library_code_that_reads_an_arrays_memory_is_refused_naming_the_function_called():
    from scipy.linalg import toeplitz

    with pytest.raises(zp.UntraceableError, match=r"as_strided .*inside scipy\.linalg\.toeplitz"):
        zp.gradient(lambda x: np.sum(toeplitz(x)), X)

