"""Run HIPS autograd's own test suite against zygotepy, through a small shim (not part of CI).

The script downloads autograd's source distribution (``pip download --no-deps --no-binary :all:
autograd==1.9.1``, which ships the tests) into a work directory, copies its ``autograd`` package
and replaces what differentiates: ``autograd.core.make_vjp`` and ``make_jvp`` call
``zygotepy.pullback`` and ``zygotepy.jvp`` (so ``grad``, ``elementwise_grad``, ``jacobian``,
``hessian``, ``holomorphic_grad``, ``value_and_grad``, ... of autograd's own
``differential_operators`` and ``test_util.check_grads`` all run on zygotepy), and
``autograd.numpy`` (with its ``random``, ``linalg`` and ``fft``) is NumPy itself: the tests'
functions are plain NumPy code, as zygotepy differentiates it. autograd's vector spaces
(``vspace``: random directions, inner products) are kept for ``check_grads``.

Conventions: autograd's vector-Jacobian product of a complex function is the conjugate of the
ChainRules one zygotepy follows (``vjp(g) = conj(pullback(conj(g)))``); forward mode is the same.

Last run: 455 of the 457 tests pass. The two others assert autograd's own refusals, which
zygotepy does not share: ``test_graphs.py::test_assignment_raises_error`` expects a TypeError
from ``A[1] = b`` into an array (zygotepy differentiates the write functionally) and
``test_fft.py::test_rfftn_odd_not_implemented`` a NotImplementedError from ``rfftn`` of an odd
last axis (zygotepy's rule covers it, and ``check_grads`` then passes).

Usage, from the repository root (prints the count and every failure with its first line)::

    python tools/autograd_suite.py [--work /tmp/autograd_suite] [-k EXPR] [--show N]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

VERSION = "1.9.1"
#: The test files of the goal (issue 28): 457 tests.
TEST_FILES = ("test_scalar_ops", "test_numpy", "test_binary_ops", "test_linalg", "test_systematic",
              "test_complex", "test_truediv", "test_jacobian", "test_fft", "test_graphs", "test_list",
              "test_tuple", "test_dict", "test_builtins", "test_direct")

#: Appended to autograd's core.py: its two differentiation primitives, on zygotepy.
CORE_OVERRIDE = '''

# -- zygotepy shim (tools/autograd_suite.py) ---------------------------------------------------
import numpy as _shim_np
import zygotepy as _zp


def _shim_conj(t):
    if isinstance(t, (tuple, list)):
        return type(t)(_shim_conj(v) for v in t)
    if isinstance(t, dict):
        return type(t)((k, _shim_conj(v)) for k, v in t.items())
    if _shim_np.iscomplexobj(t):
        return _shim_np.conj(t)
    return t


def _shim_like(x, g):
    """zygotepy's cotangent as autograd's value of the input's vector space."""
    if g is None or type(g).__name__ in ("ZeroTangent", "NoTangent"):
        return vspace(x).zeros()
    if isinstance(x, (tuple, list)):
        return type(x)(_shim_like(a, b) for a, b in zip(x, g))
    if isinstance(x, dict):
        return type(x)((k, _shim_like(x[k], g[k])) for k in x)
    if isinstance(x, float) or (isinstance(x, complex) and _shim_np.ndim(g) == 0):
        return type(x)(g) if not isinstance(x, float) or not _shim_np.iscomplexobj(g) else g
    if isinstance(x, _shim_np.ndarray) and not isinstance(g, _shim_np.ndarray):
        return _shim_np.asarray(g, dtype=_shim_np.result_type(x.dtype, float))
    return g


def _shim_array_scalar(x):
    """A Python float as autograd presents it: a 0-d array scalar (x.shape, x.ndim)."""
    return _shim_np.float64(x) if type(x) is float else x


def make_vjp(fun, x):
    ans, back = _zp.pullback(fun, _shim_array_scalar(x))

    def vjp(g):
        return _shim_like(x, _shim_conj(back(_shim_conj(g))[0]))

    return vjp, ans


def make_jvp(fun, x):
    def jvp(g):
        y, ydot = _zp.jvp(fun, (_shim_array_scalar(x),), (g,))
        return y, _shim_like(y, ydot)

    return jvp
'''

NUMPY_INIT = '''"""autograd.numpy for the zygotepy shim: NumPy itself, with autograd's additions
(tools/autograd_suite.py), written in NumPy."""
import numpy as _np
from numpy import *  # noqa: F401,F403
from numpy import __version__  # noqa: F401

import importlib as _importlib

from . import numpy_vspaces  # noqa: F401

# (numpy's own submodules are already names here: import the shim's explicitly)
fft, linalg, random = (_importlib.import_module(f"{__name__}.{name}") for name in ("fft", "linalg", "random"))


def stack(arrays, axis=0):
    """autograd's stack takes any iterable (its jacobian stacks a map)."""
    return _np.stack(list(arrays), axis)


def make_diagonal(D, offset=0, axis1=0, axis2=1):
    """autograd's complement of np.diagonal: D's last axis on a new diagonal."""
    if not (offset == 0 and axis1 == -1 and axis2 == -2):
        raise NotImplementedError("Currently make_diagonal only supports offset=0, axis1=-1, axis2=-2")
    return D[..., None] * _np.eye(_np.shape(D)[-1])
'''

LINALG = '''"""autograd.numpy.linalg for the zygotepy shim: NumPy's, with autograd's helpers."""
from functools import partial

import numpy as _np
from numpy.linalg import *  # noqa: F401,F403

_dot = partial(_np.einsum, "...ij,...jk->...ik")


def T(x):
    return _np.swapaxes(x, -1, -2)
'''


def fetch(work: Path) -> Path:
    """autograd's unpacked source distribution in ``work`` (downloaded once)."""
    source = work / f"autograd-{VERSION}"
    if not source.exists():
        work.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        f"autograd=={VERSION}", "-d", str(work)], check=True)
        with tarfile.open(work / f"autograd-{VERSION}.tar.gz") as archive:
            archive.extractall(work, filter="data")
    return source


def build_shim(source: Path, work: Path) -> Path:
    """The shim package directory (``<work>/shim/autograd``), rebuilt from the source each run."""
    shim = work / "shim"
    if shim.exists():
        shutil.rmtree(shim)
    package = shim / "autograd"
    shutil.copytree(source / "autograd", package)
    (package / "core.py").write_text((package / "core.py").read_text() + CORE_OVERRIDE)
    numpy_dir = package / "numpy"
    (numpy_dir / "__init__.py").write_text(NUMPY_INIT)
    for name in ("random", "fft"):
        (numpy_dir / f"{name}.py").write_text(f"from numpy.{name} import *  # noqa: F401,F403\n")
    (numpy_dir / "linalg.py").write_text(LINALG)
    return shim


def run(source: Path, shim: Path, selection: str, show: int) -> int:
    """Run the goal's test files with the shim first on the path; print the failures."""
    repo = Path(__file__).resolve().parents[1]
    tests = [str(source / "tests" / f"{name}.py") for name in TEST_FILES]
    config = shim.parent / "pytest.ini"  # not autograd's (it requires pytest-cov)
    config.write_text("[pytest]\n")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
               "-c", str(config), "--rootdir", str(source / "tests"), "-rf", *tests]
    if selection:
        command += ["-k", selection]
    env = {"PYTHONPATH": f"{shim}:{repo}", "PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run(command, cwd=source / "tests", env=env, capture_output=True, text=True)
    failures = [line for line in done.stdout.splitlines() if line.startswith("FAILED")]
    for line in failures[:show]:
        print(line[:300])
    summary = [line for line in done.stdout.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    print(summary[-1] if summary else done.stdout[-3000:] + done.stderr[-3000:])
    return 0 if not failures else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", default="/tmp/autograd_suite", help="download and shim directory")
    parser.add_argument("-k", default="", help="pytest -k selection")
    parser.add_argument("--show", type=int, default=100, help="failures to print")
    options = parser.parse_args()
    work = Path(options.work)
    source = fetch(work)
    sys.exit(run(source, build_shim(source, work), options.k, options.show))


if __name__ == "__main__":
    main()
