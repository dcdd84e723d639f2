"""Each exporter's ``wrap`` says which tier it chose: ``wrapped.tier`` ("native" or "host") after a
call, and ``wrapped.explain(*args)`` with the reason a function is not native."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="needs jax (the `jax` extra)")
torch = pytest.importorskip("torch", reason="needs torch (the `torch` extra)")
autograd = pytest.importorskip("autograd", reason="needs autograd (the `autograd` extra)")
import jax.numpy as jnp  # noqa: E402

import rulescore as rc  # noqa: E402
import rulescore.interop.autograd as rag  # noqa: E402
import rulescore.interop.jax as rjax  # noqa: E402
import rulescore.interop.torch as rtorch  # noqa: E402
from tests.interop.test_torch_saved_pullback import softplus  # noqa: E402


def numpy_logistic(x):
    return 1 / (1 + np.exp(-x))


rc.scalar_rule(numpy_logistic, lambda x, result: result * (1 - result))


def native_function_numpy_rule(x):
    xp = rc.array_namespace(x)
    return xp.exp(x)


@rc.rrule.register(native_function_numpy_rule)
def native_function_numpy_rule_rrule(x):
    y = np.exp(np.asarray(x))  # NumPy only: no native tier
    return y, lambda ybar: (rc.NoTangent(), ybar * y)


SYSTEMS = {
    "jax": (rjax, lambda v: jnp.asarray(v)),
    "torch": (rtorch, lambda v: torch.tensor(v)),
}
X = np.array([0.3, 0.8])


@pytest.mark.parametrize("system", sorted(SYSTEMS))
@pytest.mark.parametrize(("f", "kwargs", "tier", "reason"), [
    (np.sin, {}, "native", "sin and its rrule run on {system} arrays"),
    (softplus, {}, "native", "softplus and its rrule run on {system} arrays"),
    (numpy_logistic, {}, "host", "numpy_logistic does not run on {system} arrays"),
    (native_function_numpy_rule, {}, "host", "native_function_numpy_rule runs on {system} arrays but its "
                                             "rules do not"),
    (softplus, {"native": False}, "host", "native=False was given"),
], ids=["library-native", "user-native", "numpy", "native-function-numpy-rule", "native-false"])
def test_tier_and_explanation(system, f, kwargs, tier, reason) -> None:
    module, array = SYSTEMS[system]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the NativeTierWarning has its own tests
        g = module.wrap(f, **kwargs)
        assert g.tier is None  # no call yet: the tier depends on the arguments
        g(array(X))
        text = g.explain(array(X))
    assert g.tier == tier
    assert text.startswith(f"rulescore.interop.{system}.wrap({f.__name__}) at float")
    assert f"the {tier} tier: " + reason.format(system=system) in text


def test_the_native_tier_is_chosen_per_call() -> None:
    """np.maximum's native rule takes real arrays only (NumPy orders complex numbers, PyTorch does
    not): a complex call runs on the host, the next real one natively again."""
    g = rtorch.wrap(np.maximum)
    real, cplx = (torch.tensor(X), torch.tensor(X[::-1].copy())), (torch.tensor(X + 1j), torch.tensor(X - 1j))
    g(*real)
    assert g.tier == "native"
    g(*cplx)
    assert g.tier == "host" and "real arrays only" in g.explain(*cplx)
    g(*real)
    assert g.tier == "native"


@pytest.mark.parametrize("f", [np.tanh, numpy_logistic, softplus])
def test_autograd_says_host_and_why(f) -> None:
    g = rag.wrap(f)
    assert g.tier is None
    autograd.grad(lambda x: np.sum(g(x)))(X)
    assert g.tier == "host"
    assert "there is no native tier for autograd" in g.explain(X)
