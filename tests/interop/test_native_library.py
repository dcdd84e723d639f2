"""The library's native tier beyond the element-wise ufuncs: prod and the scans, logsumexp, the
contractions, the linear algebra (factorizations, norms, pinv) and the linear rules (trace) run on
JAX arrays and PyTorch tensors with no callback, to any order.

Each case is checked against the system's own implementation of the same function: JAX under
``jit(hessian)`` (whose lowered program must hold no host callback), ``jacfwd(jacfwd)`` and
``vmap(grad)``; PyTorch under ``torch.func.hessian``, ``vmap(grad)`` and double backward, with
``native=True`` (which refuses a function whose rules need NumPy arrays).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="needs jax (the `jax` extra)")
torch = pytest.importorskip("torch", reason="needs torch (the `torch` extra)")
special = pytest.importorskip("scipy.special", reason="needs scipy (the `test` extra)")
import jax.numpy as jnp  # noqa: E402
import jax.scipy.special as jsp  # noqa: E402
from torch import func  # noqa: E402

import rulescore.interop.jax as rjax  # noqa: E402
import rulescore.interop.torch as rtorch  # noqa: E402

RNG = np.random.default_rng(0)
M = RNG.standard_normal((3, 3))
SPD = M @ M.T + 3 * np.eye(3)
A34 = RNG.standard_normal((3, 4))
B42 = RNG.standard_normal((4, 2))
T234 = RNG.standard_normal((2, 3, 4))
V4 = RNG.standard_normal(4)
V3 = RNG.standard_normal(3)
W34 = RNG.uniform(0.5, 2.0, (3, 4))


def _lower_j(a: Any) -> Any:
    return jnp.tril(a) + jnp.tril(a, -1).T  # the symmetric matrix NumPy reads from the lower triangle


def _lower_t(a: Any) -> Any:
    return torch.tril(a) + torch.tril(a, -1).T


@dataclass(frozen=True)
class Case:
    """``f(*lead, *arrays, *static, **kwargs)`` (the arrays in one list with ``as_list``) against
    ``jax_ref`` and ``torch_ref`` (called without ``lead``, the arrays one by one); ``pick`` takes
    the array that the tested loss uses from a structured output."""

    name: str
    f: Any
    arrays: tuple[np.ndarray, ...]
    jax_ref: Callable[..., Any]
    torch_ref: Callable[..., Any]
    static: tuple[Any, ...] = ()
    lead: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    pick: Callable[[Any], Any] = lambda y: y
    as_list: bool = False  # f takes the arrays in one list (multi_dot)

    def call(self, g: Any, arrays: tuple[Any, ...]) -> Any:
        """``g`` (the wrapped ``f``) of the arrays, as ``f`` takes them."""
        return g(*self.lead, *([list(arrays)] if self.as_list else arrays), *self.static, **self.kwargs)


CASES = [
    Case("prod-axis", np.prod, (A34,), jnp.prod, lambda v, axis: torch.prod(v, dim=axis), kwargs={"axis": 1}),
    Case("prod", np.prod, (A34,), jnp.prod, torch.prod),
    Case("ndarray.prod", np.ndarray.prod, (A34,), jnp.prod, torch.prod),
    Case("cumsum-axis", np.cumsum, (A34,), jnp.cumsum, lambda v, axis: torch.cumsum(v, dim=axis),
         kwargs={"axis": 0}),
    Case("cumsum-flat", np.cumsum, (A34,), jnp.cumsum, lambda v: torch.cumsum(v.reshape(-1), 0)),
    Case("cumprod-axis", np.cumprod, (A34,), jnp.cumprod, lambda v, axis: torch.cumprod(v, dim=axis),
         kwargs={"axis": 1}),
    Case("dot-matrices", np.dot, (A34, B42), jnp.dot, torch.matmul),
    Case("dot-vectors", np.dot, (V4, V4), jnp.dot, torch.dot),
    Case("dot-3d", np.dot, (T234, B42), jnp.dot, lambda a, b: torch.tensordot(a, b, dims=([2], [0]))),
    Case("inner", np.inner, (A34, V4), jnp.inner, torch.inner),
    Case("outer", np.outer, (V4, V3), jnp.outer, torch.outer),
    Case("tensordot", np.tensordot, (T234, A34), jnp.tensordot,
         lambda a, b, axes: torch.tensordot(a, b, dims=axes), kwargs={"axes": ([1, 2], [0, 1])}),
    Case("vecdot", np.vecdot, (A34, V4), jnp.vecdot, lambda a, b: (a * b).sum(-1)),
    Case("linalg.vecdot", np.linalg.vecdot, (A34, A34), jnp.vecdot, lambda a, b, axis: (a * b).sum(axis),
         kwargs={"axis": 0}),
    Case("vdot", np.vdot, (A34, A34), lambda a, b: jnp.vdot(a, b), lambda a, b: (a * b).sum()),
    Case("matvec", np.matvec, (T234, V4), lambda a, v: a @ v, lambda a, v: a @ v),
    Case("vecmat", np.vecmat, (V3, T234), lambda v, a: v @ a, lambda v, a: v @ a),
    Case("multi_dot", np.linalg.multi_dot, (V3, A34, B42), lambda *m: jnp.linalg.multi_dot(m),
         lambda *m: torch.linalg.multi_dot(m), as_list=True),
    Case("einsum-matmul", np.einsum, (A34, B42), lambda a, b: jnp.einsum("ij,jk->ik", a, b),
         lambda a, b: torch.einsum("ij,jk->ik", a, b), lead=("ij,jk->ik",)),
    Case("einsum-diagonal", np.einsum, (M,), lambda a: jnp.einsum("ii->i", a),
         lambda a: torch.einsum("ii->i", a), lead=("ii->i",)),
    Case("einsum-ellipsis", np.einsum, (A34, V4), lambda a, b: jnp.einsum("...j,j->...", a, b),
         lambda a, b: torch.einsum("...j,j->...", a, b), lead=("...j,j->...",)),
    Case("inv", np.linalg.inv, (M,), jnp.linalg.inv, torch.linalg.inv),
    Case("det", np.linalg.det, (M,), jnp.linalg.det, torch.linalg.det),
    Case("det-4x4", np.linalg.det, (RNG.standard_normal((4, 4)),), jnp.linalg.det, torch.linalg.det),
    Case("slogdet", np.linalg.slogdet, (M,), jnp.linalg.slogdet, torch.linalg.slogdet, pick=lambda y: y[1]),
    Case("solve-vector", np.linalg.solve, (M, V3), jnp.linalg.solve, torch.linalg.solve),
    Case("solve-matrix", np.linalg.solve, (M, M.T.copy()), jnp.linalg.solve, torch.linalg.solve),
    Case("matrix_power", np.linalg.matrix_power, (M,), jnp.linalg.matrix_power, torch.linalg.matrix_power,
         static=(3,)),
    Case("matrix_power-negative", np.linalg.matrix_power, (M,), jnp.linalg.matrix_power,
         torch.linalg.matrix_power, static=(-2,)),
    Case("cholesky", np.linalg.cholesky, (SPD,), lambda a: jnp.linalg.cholesky(_lower_j(a)),
         lambda a: torch.linalg.cholesky(_lower_t(a))),
    Case("eigh", np.linalg.eigh, (SPD,), lambda a: jnp.linalg.eigh(_lower_j(a)),
         lambda a: torch.linalg.eigh(_lower_t(a)), pick=lambda y: y[0] + y[1][0] ** 2),  # sign-free
    Case("norm", np.linalg.norm, (A34,), jnp.linalg.norm, torch.linalg.norm),
    Case("norm-vector-3", np.linalg.norm, (A34,), jnp.linalg.norm,
         lambda a, ord, axis: torch.linalg.vector_norm(a, ord, axis), kwargs={"ord": 3, "axis": 1}),
    Case("norm-nuc-axes", np.linalg.norm, (T234,), jnp.linalg.norm,
         lambda a, ord, axis, keepdims: torch.linalg.matrix_norm(a, ord, axis, keepdims),
         kwargs={"ord": "nuc", "axis": (2, 0), "keepdims": True}),
    Case("norm-2", np.linalg.norm, (M,), jnp.linalg.norm, torch.linalg.matrix_norm, static=(2,)),
    Case("vector_norm", np.linalg.vector_norm, (T234,), jnp.linalg.vector_norm,
         lambda a, axis, keepdims: torch.linalg.vector_norm(a, dim=axis, keepdim=keepdims),
         kwargs={"axis": (0, 2), "keepdims": True}),
    Case("vector_norm-inf", np.linalg.vector_norm, (A34,), jnp.linalg.vector_norm,
         lambda a, ord: torch.linalg.vector_norm(a, ord), kwargs={"ord": np.inf}),
    Case("matrix_norm", np.linalg.matrix_norm, (T234,), jnp.linalg.matrix_norm, torch.linalg.matrix_norm),
    Case("matrix_norm-1", np.linalg.matrix_norm, (T234,), jnp.linalg.matrix_norm,
         lambda a, ord: torch.linalg.matrix_norm(a, ord), kwargs={"ord": 1}),
    Case("svd-values", np.linalg.svd, (A34.T.copy(),), jnp.linalg.svd,
         lambda a, compute_uv: torch.linalg.svdvals(a), kwargs={"compute_uv": False}),
    Case("svdvals", np.linalg.svdvals, (T234,), jnp.linalg.svdvals, torch.linalg.svdvals),
    Case("qr", np.linalg.qr, (A34.T.copy(),), jnp.linalg.qr, torch.linalg.qr,
         pick=lambda y: y[0] @ y[1] + y[1][0, 0]),
    Case("qr-wide", np.linalg.qr, (A34,), jnp.linalg.qr, torch.linalg.qr, pick=lambda y: y[1] + y[0][0, 1]),
    Case("qr-complete-wide", np.linalg.qr, (A34,), jnp.linalg.qr, torch.linalg.qr,
         kwargs={"mode": "complete"}, pick=lambda y: y[1] + y[0][0, 1]),
    Case("svd-values-hermitian", np.linalg.svd, (SPD,), lambda a, **kw: jnp.linalg.svd(_lower_j(a), **kw),
         lambda a, **kw: torch.linalg.svdvals(_lower_t(a)), kwargs={"hermitian": True, "compute_uv": False}),
    Case("qr-r", np.linalg.qr, (T234,), jnp.linalg.qr, lambda a, mode: torch.linalg.qr(a)[1],
         kwargs={"mode": "r"}),
    Case("pinv", np.linalg.pinv, (A34,), jnp.linalg.pinv, torch.linalg.pinv),
    Case("pinv-hermitian", np.linalg.pinv, (SPD,), lambda a, hermitian: jnp.linalg.pinv(_lower_j(a)),
         lambda a, hermitian: torch.linalg.pinv(_lower_t(a)), kwargs={"hermitian": True}),
    Case("logsumexp", special.logsumexp, (T234,), jsp.logsumexp, lambda a: torch.logsumexp(a, (0, 1, 2))),
    Case("logsumexp-axis-b", special.logsumexp, (A34,), jsp.logsumexp,
         lambda a, axis, b, keepdims: torch.logsumexp(a + torch.log(torch.tensor(b)), axis, keepdims),
         kwargs={"axis": 1, "b": W34, "keepdims": True}),
    Case("trace", np.trace, (M,), jnp.trace, torch.trace),
    Case("trace-axes", np.trace, (T234,), jnp.trace,
         lambda a, offset, axis1, axis2: torch.diagonal(a, offset, axis1, axis2).sum(-1),
         kwargs={"offset": 1, "axis1": 0, "axis2": 2}),
    Case("ndarray.trace", np.ndarray.trace, (A34,), jnp.trace, lambda a: torch.diagonal(a).sum()),
    Case("linalg.trace", np.linalg.trace, (T234,), jnp.linalg.trace,
         lambda a, offset: torch.diagonal(a, offset, -2, -1).sum(-1), kwargs={"offset": -1}),
    Case("linalg.diagonal", np.linalg.diagonal, (T234,), jnp.linalg.diagonal,
         lambda a, offset: torch.diagonal(a, offset, -2, -1), kwargs={"offset": 1}),
    Case("linalg.matrix_transpose", np.linalg.matrix_transpose, (T234,), jnp.linalg.matrix_transpose,
         lambda a: a.mT),
    Case("eigvalsh", np.linalg.eigvalsh, (SPD,), lambda a: jnp.linalg.eigvalsh(_lower_j(a)),
         lambda a: torch.linalg.eigvalsh(_lower_t(a))),
]

#: the cases also run under jacfwd(jacfwd) and vmap in JAX (each JAX transform compiles anew: a few)
JAX_ALL_TRANSFORMS = {"prod-axis", "cumprod-axis", "einsum-diagonal", "solve-vector", "eigh"}

CLOSE = {"rtol": 1e-8, "atol": 1e-10}


def _assert_tree_close(got: Any, want: Any) -> None:
    jax.tree.map(lambda g, w: np.testing.assert_allclose(np.asarray(g), np.asarray(w), **CLOSE), got, want)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_native_under_jax(case: Case) -> None:
    g = rjax.wrap(case.f, native=True)
    argnums = tuple(range(len(case.arrays)))

    def loss(*a: Any) -> Any:
        return jnp.sum(jnp.sin(case.pick(case.call(g, a))))

    def ref(*a: Any) -> Any:
        return jnp.sum(jnp.sin(case.pick(case.jax_ref(*a, *case.static, **case.kwargs))))

    hess = jax.jit(jax.hessian(loss, argnums=argnums))
    assert "callback" not in hess.lower(*case.arrays).as_text()  # JAX operations only
    # the references compiled whole: JAX's eager op-by-op dispatch made them most of the file's time
    want = jax.jit(jax.hessian(ref, argnums=argnums))(*case.arrays)
    _assert_tree_close(hess(*case.arrays), want)
    if case.name not in JAX_ALL_TRANSFORMS:
        return
    # forward over forward compiled whole; eagerly (each operation computed by NumPy, the rules' eager
    # path) in one pair of directions: the full eager jacfwd(jacfwd) cost a JAX dispatch per operation
    forward2 = jax.jit(jax.jacfwd(jax.jacfwd(loss, argnums=argnums), argnums=argnums))
    _assert_tree_close(forward2(*case.arrays), want)
    u, v = (tuple(np.cos(np.arange(a.size) + k).reshape(a.shape) for a in case.arrays) for k in (0, 1))
    eager = jax.jvp(lambda *a: jax.jvp(loss, a, u)[1], case.arrays, v)[1]
    second = sum(np.tensordot(v[i], np.tensordot(want[i][j], u[j], u[j].ndim), v[i].ndim)
                 for i in argnums for j in argnums)  # v' H u from the compiled reference Hessian
    np.testing.assert_allclose(eager, second, **CLOSE)
    batch = tuple(jnp.stack([a, 2 * a]) for a in case.arrays)  # vmap: one vectorized call
    _assert_tree_close(jax.vmap(jax.grad(loss, argnums=argnums))(*batch),
                       jax.jit(jax.vmap(jax.grad(ref, argnums=argnums)))(*batch))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_native_under_torch(case: Case) -> None:
    g = rtorch.wrap(case.f, native=True)  # raises unless the rules run on tensors
    argnums = tuple(range(len(case.arrays)))
    xs = tuple(torch.tensor(a) for a in case.arrays)

    def loss(*a: Any) -> Any:
        return torch.sin(case.pick(case.call(g, a))).sum()

    def ref(*a: Any) -> Any:
        return torch.sin(case.pick(case.torch_ref(*a, *case.static, **case.kwargs))).sum()

    want = func.hessian(ref, argnums=argnums)(*xs)
    _assert_tree_close(func.hessian(loss, argnums=argnums)(*xs), want)
    batch = tuple(torch.stack([x, 2 * x]) for x in xs)
    _assert_tree_close(func.vmap(func.grad(loss, argnums=argnums))(*batch),
                       func.vmap(func.grad(ref, argnums=argnums))(*batch))
    leaves = [x.clone().requires_grad_() for x in xs]
    firsts = torch.autograd.grad(loss(*leaves), leaves, create_graph=True)
    seconds = torch.autograd.grad(sum(d.sum() for d in firsts), leaves)
    ref_firsts = torch.autograd.grad(ref(*leaves), leaves, create_graph=True)
    wants = torch.autograd.grad(sum(d.sum() for d in ref_firsts), leaves)
    _assert_tree_close(seconds, wants)


def test_singular_vectors_keep_the_host_tier() -> None:
    """``svd``'s singular vectors are NumPy's (their signs are each LAPACK's choice): the host
    tier serves them, and ``native=True`` refuses."""
    with pytest.raises(TypeError, match="native"):
        rtorch.wrap(np.linalg.svd, native=True)(torch.tensor(A34))
    u, s, vh = rtorch.wrap(np.linalg.svd)(torch.tensor(A34), full_matrices=False)
    np.testing.assert_allclose(u.numpy(), np.linalg.svd(A34, full_matrices=False)[0], **CLOSE)
