"""Instructions per gradient call, counted by callgrind: repeatable on a loaded machine.

Timings on a shared two-core machine move by tens of percent; instruction counts do not. This
script runs each workload in one process under ``valgrind --tool=callgrind`` for the checkout
given with ``--source`` (default: this one), so two commits can be compared side by side::

    git worktree add /tmp/base <commit>
    python bench/instructions.py --source /tmp/base --source .

Only the measured calls are counted: the process imports everything and makes warm-up calls
(the rewrite, the caches and the interpreter's specialisation are not what is measured) with
collection off (``--collect-atstart=no``), then runs the N measured calls inside
``sys.call_tracing``, whose C function ``sys_call_tracing`` is the ``--toggle-collect`` switch:
collection is on exactly while it runs, and the figure is the collected count divided by N.
Nothing else calls ``sys.call_tracing`` (the program replaces it with a function that raises
before measuring), and a Python whose ``libpython`` has no symbol table collects nothing, which
is reported as an error rather than a figure. Counting the whole process instead, N calls minus
0 calls, left the per-call figure at the mercy of the processes' spread of millions of
instructions outside the workload: one MLP count came out negative. ``first_call``
(import plus the first gradient, counted once) is about the import, so it still counts whole
processes: one with the import and a gradient minus one importing NumPy only.

Workloads: ``scalar`` (the ``math.sin`` chain of workload 1), ``np_scalar`` (the same chain
with ``np.sin`` on Python floats), ``one_op`` (the gradient of ``np.sum`` of a 4x4 array: what a
``gradient`` call costs around its one operation), ``mlp`` (workload 2's MLP at width 4, where NumPy's
arithmetic is negligible and the engine's own work dominates), ``first_call`` (import plus the
first gradient, counted once), ``nested_tanh``, ``hvp`` and ``rosen`` (workload 8's derivatives
1-4 of ``tanh``, Hessian-vector product and Hessian of a 100-dim Rosenbrock, on ``wl_nested``'s
data; ``nested_tanh_jvp``, the derivatives as nested ``jvp``) and ``grad_of_grad`` (its second
derivative of ``sin(x) * x**2`` at a float) with ``nested_tanh_autograd``, ``hvp_autograd``,
``rosen_autograd`` and ``grad_of_grad_autograd``, the same computations in HIPS autograd, for a
ratio that load does not move, and ``linalg`` (one gradient through ``svd``, ``qr``, ``pinv``, the
norms, ``trace``, ``vdot``, ``matvec``, ``multi_dot`` and ``scipy.special.logsumexp``, whose rules
also have a native tier), and workload 10's problems: ``wide`` (all), ``wide:<problem>`` (its
zygotepy variants and autograd), ``wide:<problem>:<i>`` (zygotepy's i-th variant) or
``wide:<problem>:autograd``::

    python bench/instructions.py --only nested_tanh,nested_tanh_autograd,hvp,hvp_autograd -n 10
    python bench/instructions.py --only rosen,rosen_autograd -n 5
    python bench/instructions.py --only wide:softplus_hvp -n 3

and ``gp:<kernel>`` (one ``log_marginal_likelihood`` gradient of ``tests/realworld``'s GP at 200
points, a kernel of ``stock_kernels``; needs scikit-learn) with ``gp_library:<kernel>``, the
library's own analytic gradient::

    python bench/instructions.py --only gp:Matern-inf,gp_library:Matern-inf -n 3
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

WORKLOADS = {
    "scalar": """
import math
def f(x):
    y = x
    for _ in range(100):
        y = math.sin(y) * x + 0.1
    return y
""",
    "np_scalar": """
import numpy as np
def f(x):
    y = x
    for _ in range(100):
        y = np.sin(y) * x + 0.1
    return y
""",
    "one_op": """
import numpy as np
x = np.ones((4, 4))
def f(x):
    return np.sum(x)
""",
    "mlp": """
import numpy as np
rng = np.random.default_rng(0)
Ws = [rng.standard_normal((4, 4)) * 0.5 for _ in range(4)]
bs = [rng.standard_normal(4) * 0.1 for _ in range(4)]
X = rng.standard_normal((8, 4))
def f(params):
    h = X
    for W, b in params:
        h = np.tanh(h @ W + b)
    return np.sum(h ** 2) / h.shape[0]
""",
}
_NESTED = """
import numpy as np
x = np.linspace(-2.0, 2.0, 200)
rng = np.random.default_rng(8)
a = rng.standard_normal((50, 50))
A = a @ a.T / 50
xh, vh = rng.standard_normal(50), rng.standard_normal(50)
xr = rng.standard_normal(100) * 0.5
"""
_TANH_ZP = """
def tanh_derivatives(x):
    out, f = [], np.tanh
    for _ in range(4):
        f = (lambda g: lambda v: zp.gradient(lambda w: np.sum(g(w)), v)[0])(f)
        out.append(f(x))
    return out
"""
_TANH_JVP_ZP = """
def tanh_derivatives(x):
    out, f = [], np.tanh
    for _ in range(4):
        f = (lambda g: lambda v: zp.jvp(g, (v,), (np.ones_like(v),))[1])(f)
        out.append(f(x))
    return out
"""
_TANH_AG = """
import autograd, autograd.numpy as anp
def tanh_derivatives(x):
    out, f = [], anp.tanh
    for _ in range(4):
        f = autograd.elementwise_grad(f)
        out.append(f(x))
    return out
"""
_HVP_ZP = """
def lse(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m))) + 0.5 * (x @ (A @ x))
def hvp(x, v):
    return zp.jvp(lambda u: zp.gradient(lse, u)[0], (x,), (v,))[1]
"""
_HVP_AG = """
import autograd, autograd.numpy as anp
def lse(x):
    m = anp.max(x)
    return m + anp.log(anp.sum(anp.exp(x - m))) + 0.5 * anp.dot(x, anp.dot(A, x))
hvp = autograd.hessian_vector_product(lse)
"""
_GRAD2_ZP = """
def sin_x2(x):
    return np.sin(x) * x**2
def grad_of_grad(x):
    return zp.gradient(lambda u: zp.gradient(sin_x2, u)[0], x)[0]
"""
_GRAD2_AG = """
import autograd, autograd.numpy as anp
grad_of_grad = autograd.grad(autograd.grad(lambda u: anp.sin(u) * u**2))
"""
_ROSEN_ZP = """
def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
def hess(x):
    return zp.hessian(rosen, x)
"""
_ROSEN_AG = """
import autograd, autograd.numpy as anp
hess = autograd.hessian(lambda x: anp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2))
"""
# Workload 8's nested cases (bench/wl_nested.py), and the same with HIPS autograd for reference:
# a ratio of instruction counts that load on the machine does not move.
WORKLOADS.update({
    "nested_tanh": _NESTED + _TANH_ZP, "nested_tanh_autograd": _NESTED + _TANH_AG,
    "nested_tanh_jvp": _NESTED + _TANH_JVP_ZP,
    "hvp": _NESTED + _HVP_ZP, "hvp_autograd": _NESTED + _HVP_AG,
    "grad_of_grad": _NESTED + _GRAD2_ZP, "grad_of_grad_autograd": _NESTED + _GRAD2_AG,
    "rosen": _NESTED + _ROSEN_ZP, "rosen_autograd": _NESTED + _ROSEN_AG,
})
# The rules with a native tier beyond the element-wise ones and matmul (svd, qr, pinv, the norms,
# trace, vdot, matvec, multi_dot, logsumexp): their NumPy path must cost what it did.
WORKLOADS["linalg"] = """
import numpy as np
import scipy.special
rng = np.random.default_rng(0)
A0 = rng.standard_normal((6, 4))
B = rng.standard_normal((4, 3))
W = rng.uniform(0.5, 2.0, (6, 4))
def f(A):
    s = np.linalg.svd(A, full_matrices=False)[1]
    r = np.linalg.qr(A)[1]
    norms = (np.linalg.norm(A) + np.linalg.norm(A, "nuc") + np.linalg.vector_norm(A, ord=3)
             + np.linalg.matrix_norm(A) + np.sum(np.linalg.svdvals(A)))
    products = np.trace(A.T @ A) + np.vdot(A, A) + np.sum(np.linalg.multi_dot([A, B, B.T]))
    return (np.sum(s) + np.sum(r * r) + norms + products + np.sum(np.linalg.pinv(A))
            + np.sum(np.matvec(A, B[:, 0])) + np.sum(scipy.special.logsumexp(A, axis=1, b=W)))
"""
ARGS = {"scalar": "0.7", "np_scalar": "0.7", "one_op": "x", "mlp": "list(zip(Ws, bs))", "linalg": "A0"}
#: What one measured call is, when not ``zp.gradient(f, arg)``.
CALLS = {"nested_tanh": "tanh_derivatives(x)", "nested_tanh_jvp": "tanh_derivatives(x)",
         "nested_tanh_autograd": "tanh_derivatives(x)",
         "hvp": "hvp(xh, vh)", "hvp_autograd": "hvp(xh, vh)",
         "grad_of_grad": "grad_of_grad(0.7)", "grad_of_grad_autograd": "grad_of_grad(0.7)",
         "rosen": "hess(xr)", "rosen_autograd": "hess(xr)"}

#: Warm-up calls before the measured ones: CPython 3.11 specialises a function's bytecode only
#: after it has run a few times, and the engine's per-call code runs once per gradient.
WARMUP = 10
#: The C function of ``sys.call_tracing``: collection is on while it runs the measured calls.
SWITCH = "sys_call_tracing"

PROGRAM = """
import sys
sys.path.insert(0, {source!r})
import zygotepy as zp
{body}
arg = {arg}
for _ in range({warmup}):
    {call}
def measured_calls():
    for _ in range({n}):
        {call}
def call_tracing_is_the_switch(func, args):
    raise RuntimeError("bench/instructions.py: the workload called sys.call_tracing, which switches "
                       "callgrind's collection; the count would be wrong")
measure, sys.call_tracing = sys.call_tracing, call_tracing_is_the_switch
measure(measured_calls, ())
"""

FIRST_CALL = """
import sys
sys.path.insert(0, {source!r})
{import_only}
"""


def count(program: str, *options: str) -> int:
    """Instructions callgrind collects running ``program`` in a fresh interpreter."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "program.py")
        with open(path, "w") as fh:
            fh.write(program)
        env = {**os.environ, "PYTHONHASHSEED": "0", "RULESCORE_CHECKS": "0"}
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/cg.out", *options,
             sys.executable, path],
            capture_output=True, text=True, env=env, check=True,
        )
    match = re.search(r"Collected : (\d+)", out.stderr)
    if match is None:
        raise RuntimeError(f"callgrind printed no total:\n{out.stderr[-2000:]}")
    return int(match.group(1))


def per_call(source: str, workload: str, n: int) -> float:
    """Instructions per call of ``workload``: N calls counted in one process, divided by N."""
    body, arg = WORKLOADS[workload], ARGS.get(workload, "None")
    run = CALLS.get(workload, "zp.gradient(f, arg)")
    program = PROGRAM.format(source=source, body=body, arg=arg, call=run, n=n, warmup=WARMUP)
    collected = count(program, "--collect-atstart=no", f"--toggle-collect={SWITCH}")
    if collected == 0:
        raise RuntimeError(
            f"callgrind collected nothing for {workload!r}: the switch {SWITCH!r} was not found, so "
            f"{sys.executable}'s libpython has no symbol table (use a Python built with symbols)")
    return collected / n


#: Workload 10's problems (``bench/wl_nested_wide.py``, imported from this checkout's ``bench/``):
#: ``wide:<problem>:<i>`` is zygotepy's i-th variant, ``wide:<problem>:autograd`` autograd's.
WIDE_BODY = """
sys.path.insert(1, {bench!r})
import wl_nested_wide
cases = wl_nested_wide.autograd_cases() if {variant!r} == "autograd" else wl_nested_wide.zygote_cases()
fn = cases[{problem!r}] if {variant!r} == "autograd" else list(cases[{problem!r}].values())[int({variant!r})]
"""


def wide_names(spec: str) -> list[str]:
    """``wide`` (every problem, each variant and autograd) or ``wide:<problem>`` expanded."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import wl_nested_wide

    problems = list(wl_nested_wide.TITLES) if spec == "wide" else [spec.split(":")[1]]
    out = []
    for problem in problems:
        variants = len(wl_nested_wide.zygote_cases()[problem])
        out += [f"wide:{problem}:{i}" for i in range(variants)] + [f"wide:{problem}:autograd"]
    return out


def wide_per_call(source: str, name: str, n: int) -> float:
    _, problem, variant = name.split(":")
    bench = os.path.dirname(os.path.abspath(__file__))
    body = WIDE_BODY.format(bench=bench, problem=problem, variant=variant)
    program = PROGRAM.format(source=source, body=body, arg="None", call="fn()", n=n, warmup=WARMUP)
    return count(program, "--collect-atstart=no", f"--toggle-collect={SWITCH}") / n


#: ``gp:<kernel>``: one ``log_marginal_likelihood`` gradient of ``tests/realworld``'s GP at 200
#: points by zygotepy; ``gp_library:<kernel>``, scikit-learn's own (``eval_gradient=True``).
GP_BODY = """
sys.path.insert(1, {source!r})
import warnings
warnings.simplefilter("ignore")
from tests.realworld.models import gp_cases
case = [c for c in gp_cases(200) if c.name == {kernel!r} + " log_marginal_likelihood"][0]
"""


def gp_per_call(source: str, name: str, n: int) -> float:
    system, kernel = name.split(":", 1)
    call = "case.gradient(case.theta)" if system == "gp_library" else "zp.gradient(case.f, case.theta)"
    program = PROGRAM.format(source=source, body=GP_BODY.format(source=source, kernel=kernel), arg="None",
                             call=call, n=n, warmup=WARMUP)
    return count(program, "--collect-atstart=no", f"--toggle-collect={SWITCH}") / n


def first_call(source: str) -> float:
    body = WORKLOADS["scalar"] + "\nimport zygotepy as zp\nzp.gradient(f, 0.7)\n"
    with_call = count(FIRST_CALL.format(source=source, import_only=body))
    bare = count(FIRST_CALL.format(source=source, import_only="import numpy"))
    return float(with_call - bare)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", action="append", help="checkout(s) to measure (default: this one)")
    parser.add_argument("--only", default="scalar,np_scalar,mlp,first_call")
    parser.add_argument("-n", type=int, default=50, help="gradient calls counted per workload")
    opts = parser.parse_args()
    sources = [os.path.abspath(s) for s in (opts.source or [os.path.join(os.path.dirname(__file__), "..")])]
    names = [w for name in opts.only.split(",") for w in (  # wide, wide:<problem>: every variant
        wide_names(name) if name == "wide" or (name[:5] == "wide:" and name.count(":") == 1) else [name])]
    print("| workload | " + " | ".join(sources) + " |")
    print("|---|" + "---:|" * len(sources))
    for name in names:
        row = []
        for src in sources:
            value = (first_call(src) if name == "first_call" else wide_per_call(src, name, opts.n)
                     if name.startswith("wide:") else gp_per_call(src, name, opts.n)
                     if name.startswith("gp") else per_call(src, name, opts.n))
            row.append(f"{value / 1e6:.3f} M")
        print(f"| {name} | " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
