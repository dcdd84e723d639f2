"""Child process of workload 4: time one system's first gradient of a never-seen function.

``python bench/_first_call_child.py SYSTEM MODULE REFERENCE [--warm WARM_MODULE] [--steady N]``
imports the system, optionally differentiates WARM_MODULE's function first (so only the new
function's own transform/trace cost remains), then times the first gradient of MODULE's ``f``,
then N more calls (steady state), checks the answer against REFERENCE's ``grad_hand`` and
prints one JSON line.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _env import pin  # noqa: E402

pin()

import numpy as np  # noqa: E402


def load(path: str) -> object:
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def cached(make):  # noqa: ANN001, ANN201
    """``grad(module, x)`` with the system's gradient function built once per module (as users do)."""
    made: dict[int, object] = {}

    def grad(module: object, x: np.ndarray) -> object:
        key = id(module)
        if key not in made:  # building it is part of the first call
            made[key] = make(module)
        return made[key](x)  # type: ignore[operator]

    return grad


def gradient_fn(system: str):  # noqa: ANN201
    """``grad(f, x) -> NumPy array`` for the system, with its library imported."""
    if system == "hand-written":
        return lambda module, x: module.grad_hand(x)
    if system == "zygotepy":
        import zygotepy as zp

        return lambda module, x: zp.gradient(module.f, x)[0]
    if system == "autograd":
        import autograd

        return cached(lambda module: autograd.grad(module.f))
    if system == "torch eager":
        import torch

        torch.set_num_threads(1)

        def torch_grad(module: object, x: np.ndarray) -> np.ndarray:
            xt = torch.from_numpy(x).requires_grad_()
            (g,) = torch.autograd.grad(module.f(xt), xt)  # type: ignore[attr-defined]
            return g.numpy()

        return torch_grad
    if system in ("jax eager", "jax jit"):
        import jax

        jax.config.update("jax_enable_x64", True)
        if system == "jax eager":
            grad = cached(lambda module: jax.grad(module.f))
        else:  # made once per function: a new jit object would compile again on every call
            grad = cached(lambda module: jax.jit(jax.grad(module.f)))
        return lambda module, x: np.asarray(grad(module, x))
    raise ValueError(system)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("system")
    parser.add_argument("module")
    parser.add_argument("reference")
    parser.add_argument("--warm", default=None)
    parser.add_argument("--steady", type=int, default=10)
    parser.add_argument("--timer", choices=("wall", "cpu"), default="wall")
    opts = parser.parse_args()
    clock = time.process_time if opts.timer == "cpu" else time.perf_counter

    start = time.perf_counter()
    grad = gradient_fn(opts.system)
    import_s = time.perf_counter() - start
    x = np.linspace(-1.0, 1.0, 16)
    if opts.warm:
        grad(load(opts.warm), x)
    module = load(opts.module)  # importing the module is not part of the first call
    start = clock()
    g = grad(module, x)
    first = clock() - start
    steady = []
    for _ in range(opts.steady):
        start = clock()
        grad(module, x)
        steady.append(clock() - start)
    ref = load(opts.reference).grad_hand(x)  # type: ignore[attr-defined]
    err = float(np.max(np.abs(np.asarray(g) - ref)) / np.max(np.abs(ref)))
    print(
        json.dumps(
            {
                "import": import_s,
                "first": first,
                "steady": statistics.median(steady) if steady else None,
                "err": err,
            }
        )
    )


if __name__ == "__main__":
    main()
