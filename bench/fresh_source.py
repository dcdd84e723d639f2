"""Generate a new 100-line Python function (and its hand-written gradient) as a module file.

Each line combines the previous value with an earlier one through ``sin``, ``cos``, ``tanh``,
``exp``, products and sums (about 3 operations per line). The same body is written once per
system's array library (``import numpy as np``, ``import autograd.numpy as np``, ``import torch
as np``, ``import jax.numpy as np``), so every system differentiates the very same program from a
real file, and the NumPy flavour also gets ``grad_hand``, its reverse sweep written out.
"""

from __future__ import annotations

import os
import random

IMPORTS = {
    "numpy": "import numpy as np",
    "autograd": "import autograd.numpy as np",
    "torch": "import torch as np",
    "jax": "import jax.numpy as np",
}


def _lines(n: int, seed: int) -> tuple[list[str], list[str]]:
    """The forward lines and the reverse-sweep lines (in reverse order) for ``n`` statements."""
    rng = random.Random(seed)
    forward, backward = [], []
    for i in range(1, n + 1):
        a, b = i - 1, rng.randrange(0, max(i - 1, 1))
        c, d = round(rng.uniform(0.3, 0.7), 3), round(rng.uniform(0.3, 0.7), 3)
        kind = rng.randrange(6)
        va, vb, g = f"v{a}", f"v{b}", f"g{i}"
        if kind == 0:
            forward.append(f"v{i} = np.sin({va}) * {c} + {vb}")
            grads = [(a, f"{g} * {c} * np.cos({va})"), (b, g)]
        elif kind == 1:
            forward.append(f"v{i} = np.tanh({va}) * {vb}")
            grads = [(a, f"{g} * {vb} * (1.0 - np.tanh({va}) ** 2)"), (b, f"{g} * np.tanh({va})")]
        elif kind == 2:
            forward.append(f"v{i} = {va} * {c} - {vb} * {d}")
            grads = [(a, f"{g} * {c}"), (b, f"-{g} * {d}")]
        elif kind == 3:
            forward.append(f"v{i} = np.cos({va}) * np.sin({vb})")
            grads = [(a, f"-{g} * np.sin({va}) * np.sin({vb})"), (b, f"{g} * np.cos({va}) * np.cos({vb})")]
        elif kind == 4:
            forward.append(f"v{i} = ({va} + {vb}) * {c}")
            grads = [(a, f"{g} * {c}"), (b, f"{g} * {c}")]
        else:
            forward.append(f"v{i} = np.exp(-{va} * {va}) + {vb} * {c}")
            grads = [(a, f"{g} * np.exp(-{va} * {va}) * (-2.0 * {va})"), (b, f"{g} * {c}")]
        backward.append([f"g{j} = g{j} + {expr}" for j, expr in grads])
    return forward, [line for group in reversed(backward) for line in group]


def write_module(directory: str, tag: str, flavour: str, n: int = 100, seed: int = 0) -> str:
    """Write ``fresh_<tag>_<flavour>.py`` defining ``f`` (and ``grad_hand`` for NumPy); return its path."""
    forward, backward = _lines(n, seed)
    body = [IMPORTS[flavour], "", "", "def f(v0):"]
    body += [f"    {line}" for line in forward]
    body += [f"    return np.sum(v{n})", ""]
    if flavour == "numpy":
        body += ["", "def grad_hand(v0):"]
        body += [f"    {line}" for line in forward]
        body += [f"    g{n} = np.ones_like(v{n})"]
        body += [f"    g{i} = 0.0" for i in range(n)]
        body += [f"    {line}" for line in backward]
        body += ["    return g0", ""]
    path = os.path.join(directory, f"fresh_{tag}_{flavour}.py")
    with open(path, "w") as fh:
        fh.write("\n".join(body))
    return path
