"""Pin every system to one BLAS/compute thread. Import and call :func:`pin` before NumPy.

The machine's cores are shared, and a multi-threaded BLAS in one system but not in another
would make the ratios meaningless, so every system gets exactly one thread: OpenMP, OpenBLAS,
MKL, BLIS, Accelerate, NumExpr, PyTorch (``torch.set_num_threads(1)``, done where torch is
imported) and XLA (single-threaded Eigen, one intra-op thread).
"""

from __future__ import annotations

import os
import sys

THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)
XLA_FLAGS = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(BENCH_DIR)


def pin() -> None:
    """Set the thread variables (before NumPy is imported) and put this checkout first on sys.path."""
    if "numpy" in sys.modules and not all(os.environ.get(name) == "1" for name in THREAD_VARIABLES):
        raise RuntimeError("bench._env.pin() must run before numpy is imported")
    for name in THREAD_VARIABLES:
        os.environ[name] = "1"
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_multi_thread_eigen" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {XLA_FLAGS}".strip()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ["JAX_ENABLE_X64"] = "1"  # every system computes in float64
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ["RULESCORE_CHECKS"] = "0"  # rule checking mode (on in the test suite) is not measured
    for path in (REPO_DIR, BENCH_DIR):  # measure this checkout's zygotepy, import bench modules
        if path not in sys.path:
            sys.path.insert(0, path)


def child_env() -> dict[str, str]:
    """The environment for a benchmark subprocess: pinned the same way."""
    env = dict(os.environ)
    for name in THREAD_VARIABLES:
        env[name] = "1"
    env["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", XLA_FLAGS)
    env["JAX_ENABLE_X64"] = "1"
    env["RULESCORE_CHECKS"] = "0"
    env["PYTHONPATH"] = os.pathsep.join([REPO_DIR, BENCH_DIR, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env
