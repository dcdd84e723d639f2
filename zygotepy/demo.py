"""A tour of zygotepy and rulescore: ``python -m zygotepy.demo``.

Differentiates plain Python and NumPy (a small neural network, a user class, a recursive
function), uses a rule registered for an undecorated function, takes a second derivative,
and checks every number against central finite differences.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import rulescore as rc
import zygotepy as zp


@dataclass
class Point:
    x: float
    y: float


def dist(p: Point) -> float:
    return math.sqrt(p.x ** 2 + p.y ** 2)


def mlp_loss(W1: np.ndarray, W2: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    h = np.tanh(X @ W1)
    return float(np.mean((h @ W2 - y) ** 2))


def power(x: float, n: int) -> float:
    return 1.0 if n == 0 else x * power(x, n - 1)


def softplus(x: float) -> float:
    return math.log1p(math.exp(x))


@rc.rrule.register(softplus)
def softplus_rrule(x: float):  # type: ignore[no-untyped-def]
    y = softplus(x)

    def softplus_pullback(ybar):  # type: ignore[no-untyped-def]
        print("    (the registered rrule for softplus ran)")
        return rc.NoTangent(), ybar / (1 + np.exp(-x))

    return y, softplus_pullback


def central_difference(f, x: float, h: float = 1e-6) -> float:  # type: ignore[no-untyped-def]
    return float((f(x + h) - f(x - h)) / (2 * h))


def main() -> None:
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(8, 3)), rng.normal(size=(8, 1))
    W1, W2 = rng.normal(size=(3, 4)), rng.normal(size=(4, 1))

    print("1. gradient of an MLP loss written in plain NumPy")
    g1, g2 = zp.gradient(mlp_loss, W1, W2, X, y, argnums=(0, 1))
    E = np.zeros_like(W1)
    E[0, 0] = 1e-6
    fd = (mlp_loss(W1 + E, W2, X, y) - mlp_loss(W1 - E, W2, X, y)) / 2e-6
    print(f"   dL/dW1[0,0] = {g1[0, 0]:.8f}   finite difference = {fd:.8f}")

    print("2. a user class gets a structural Tangent")
    (gp,) = zp.gradient(dist, Point(3.0, 4.0))
    print(f"   {gp}")

    print("3. recursion: d/dx x**5 at 2 via a recursive power()")
    print(f"   {zp.gradient(power, 2.0, 5)[0]}  (expected {5 * 2.0 ** 4})")

    print("4. a rule registered in rulescore is used wherever the function is called")
    g = zp.gradient(lambda t: 2 * softplus(t), 0.3)[0]
    print(f"   {g:.8f}   finite difference = {central_difference(lambda t: 2 * softplus(t), 0.3):.8f}")

    print("5. nested AD: second derivative of sin(x) * x")
    d2 = zp.gradient(lambda x: zp.gradient(lambda t: math.sin(t) * t, x)[0], 1.0)[0]
    print(f"   {d2:.8f}   exact = {2 * math.cos(1.0) - math.sin(1.0):.8f}")

    print("6. a custom adjoint (Zygote's @adjoint) and a gradient hook")
    print(f"   {zp.gradient(lambda a, b: zp.hook(lambda g: -g, a) * b, 2, 3)}")


if __name__ == "__main__":
    main()
