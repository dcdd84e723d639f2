"""One representative program per rule family, shared by the tests of every mode that runs
them (forward, reverse over reverse, the unchecked fast paths)."""

import math

import numpy as np

_RNG = np.random.default_rng(7)
A = _RNG.normal(size=(3, 3))
SPD = A @ A.T + 3 * np.eye(3)

#: One representative program per rule family: (name, f, x).
FAMILIES = [
    ("operators", lambda x: (x * x - x / (1.5 + x ** 2)) @ A @ x, _RNG.normal(size=3)),
    ("math", lambda x: math.sin(x) * math.exp(x) + math.atan2(x, 2.0) + math.hypot(x, 1.0), 0.4),
    ("builtins", lambda x: abs(x) * max(x, 0.5 * x) + sum([x, 2 * x]) + float(x), -0.7),
    ("ufuncs", lambda x: np.tanh(x) * np.log1p(np.exp(x)) + np.arctan2(x, 1.0 + x ** 2), _RNG.normal(size=4)),
    ("reductions", lambda x: np.stack([np.sum(x ** 2, axis=0), np.prod(x, axis=1), np.max(x, axis=0)]),
     _RNG.normal(size=(3, 3))),
    ("shape", lambda x: np.concatenate([x.reshape(2, 3).T.ravel(), np.flip(x), np.roll(x, 1) * x]),
     _RNG.normal(size=6)),
    ("indexing", lambda x: x[1:, None] * x[np.array([0, 0, 2])] + x[x > 0].sum(), _RNG.normal(size=4)),
    ("linalg", lambda x: np.linalg.solve(SPD + np.diag(x), x) + np.linalg.det(SPD + np.outer(x, x)),
     _RNG.normal(size=3)),
    ("fft", lambda x: np.abs(np.fft.rfft(x)) ** 2, _RNG.normal(size=6)),
]
