"""Pin every system to one BLAS/compute thread. Import and call :func:`pin` before NumPy.

The machine's cores are shared, and a multi-threaded BLAS in one system but not in another
would make the ratios meaningless, so every system gets exactly one thread: OpenMP, OpenBLAS,
MKL, BLIS, Accelerate, NumExpr, PyTorch (``torch.set_num_threads(1)``, done where torch is
imported) and XLA (single-threaded Eigen, one intra-op thread).

glibc's allocator is pinned too (:func:`pin_allocator`): by default it serves blocks of 128 KiB
and more (a 64x256 float64 array) with fresh ``mmap`` pages, and moves that threshold as
blocks are freed, so the cost of the same NumPy code changed by up to 1.6x from one process to
the next (page faults on every new array, or none). Every system then paid it differently.
"""

from __future__ import annotations

import ctypes
import ctypes.util
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
    pin_allocator()
    for path in (REPO_DIR, BENCH_DIR):  # measure this checkout's zygotepy, import bench modules
        if path not in sys.path:
            sys.path.insert(0, path)


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt parameters (malloc.h)
_HEAP_LIMIT = 256 * 2**20


def pin_allocator() -> str:
    """Serve blocks up to 256 MiB from the heap and keep freed memory (glibc only); a description."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        ok = libc is not None and libc.mallopt(_M_MMAP_THRESHOLD, _HEAP_LIMIT) == 1 \
            and libc.mallopt(_M_TRIM_THRESHOLD, 2 * _HEAP_LIMIT) == 1
    except (OSError, AttributeError):
        ok = False
    return "glibc mallopt: heap up to 256 MiB, no trimming" if ok else "allocator not pinned (no glibc)"


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
