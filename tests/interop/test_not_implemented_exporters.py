"""rc.not_implemented through the exporters: a gradient that does not need the missing derivative
works (host and native tiers); one that does raises NotImplementedError naming it, never a zero."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="needs jax (the `jax` extra)")
torch = pytest.importorskip("torch", reason="needs torch (the `torch` extra)")
autograd = pytest.importorskip("autograd", reason="needs autograd (the `autograd` extra)")
import autograd.numpy as anp  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import rulescore as rc  # noqa: E402
import rulescore.interop.autograd as rag  # noqa: E402
import rulescore.interop.jax as rjax  # noqa: E402
import rulescore.interop.torch as rtorch  # noqa: E402
from rulescore.interop._host import NativeTierWarning  # noqa: E402

X = np.array([0.3, 0.7, -1.1])
NU = 1.5


def _dx(nu, x):
    return nu * x * np.cos(nu * x) + np.sin(nu * x)


def host_wave(nu, x):
    return np.sin(nu * np.asarray(x)) * x


@rc.rrule.register(host_wave)
def host_wave_rrule(nu, x):
    def host_wave_pullback(ybar):
        return rc.NoTangent(), rc.not_implemented("d/dnu of host_wave"), rc.project(x, ybar * _dx(nu, x))

    return host_wave(nu, x), host_wave_pullback


def native_wave(nu, x):
    xp = rc.array_namespace(nu, x)
    return xp.sin(nu * x) * x


@rc.rrule.register(native_wave)
def native_wave_rrule(nu, x):
    xp = rc.array_namespace(nu, x)

    def native_wave_pullback(ybar):
        dx = ybar * (nu * x * xp.cos(nu * x) + xp.sin(nu * x))
        return rc.NoTangent(), rc.not_implemented("d/dnu of native_wave"), rc.project(x, dx)

    return native_wave(nu, x), native_wave_pullback


WAVES = [host_wave, native_wave]


@pytest.mark.parametrize("f", WAVES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("transform", [lambda h: h, jax.jit], ids=["eager", "jit"])
def test_jax(f, transform) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", NativeTierWarning)  # the native one stays native
        g = rjax.wrap(f)
        got = transform(jax.grad(lambda x: g(NU, x).sum()))(jnp.asarray(X))
    np.testing.assert_allclose(got, _dx(NU, X), rtol=1e-12)
    with pytest.raises(Exception, match=f"d/dnu of {f.__name__}"):
        transform(jax.grad(lambda nu: g(nu, jnp.asarray(X)).sum()))(NU)


@pytest.mark.parametrize("f", WAVES, ids=lambda f: f.__name__)
def test_torch(f) -> None:
    g = rtorch.wrap(f)
    x = torch.tensor(X, requires_grad=True)
    g(torch.tensor(NU, dtype=torch.float64), x).sum().backward()
    np.testing.assert_allclose(x.grad, _dx(NU, X), rtol=1e-12)
    np.testing.assert_allclose(torch.func.grad(lambda v: g(torch.tensor(NU, dtype=torch.float64), v).sum())(
        torch.tensor(X)), _dx(NU, X), rtol=1e-12)
    nu = torch.tensor(NU, dtype=torch.float64, requires_grad=True)
    with pytest.raises(NotImplementedError, match=f"d/dnu of {f.__name__}"):
        g(nu, torch.tensor(X)).sum().backward()


@pytest.mark.parametrize("f", WAVES, ids=lambda f: f.__name__)
def test_autograd(f) -> None:
    g = rag.wrap(f)
    np.testing.assert_allclose(autograd.grad(lambda x: anp.sum(g(NU, x)))(X), _dx(NU, X), rtol=1e-12)
    with pytest.raises(NotImplementedError, match=f"d/dnu of {f.__name__}"):
        autograd.grad(lambda nu: anp.sum(g(nu, X)))(NU)
    with pytest.raises(NotImplementedError, match=f"d/dnu of {f.__name__}"):
        autograd.grad(lambda nu, x: anp.sum(g(nu, x)), argnum=(0, 1))(NU, X)
