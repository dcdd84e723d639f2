"""Differential fuzzer of scalar code: the tape of numbers against the rules it stands for.

Usage (from the repository root):

    python bench/scalar_fuzz.py -n 3000            # programs of seeds 0..2999
    python bench/scalar_fuzz.py --show 1855        # one seed's program and both gradients

Each program is a few lines of Python on two scalars (a float or a NumPy float64 each): random
chains of ``+ - * /``, negation, ``math`` and NumPy functions, and constants of every real type
(ints, floats, float64, ``True``, which makes NumPy compute in float16). Its gradient is taken
twice: outside rulescore's checking mode (first-order scalar code is recorded as a tape of
numbers, the rules' scalar forms) and inside it (every rrule runs and is checked). The two must
agree in value (relative 1e-12) and in type. Exit status 1 if any program disagrees.
"""

from __future__ import annotations

import argparse
import linecache
import math
import random
import sys
import warnings
from typing import Any

import numpy as np

import rulescore as rc
import zygotepy as zp

UNARY = ("math.sin", "math.cos", "math.exp", "math.tanh", "np.sin", "np.exp", "np.tanh", "neg",
         "math.sqrt", "np.log1p", "math.atan")
CONSTANTS = ("2", "0.5", "np.float64(1.5)", "3", "True", "-1.25")


def _expr(r: random.Random, depth: int) -> str:
    if depth == 0 or r.random() < 0.2:
        return r.choice(["x", "y", "z"]) if r.random() < 0.75 else r.choice(CONSTANTS)
    if r.random() < 0.4:
        f, a = r.choice(UNARY), _expr(r, depth - 1)
        if f == "neg":
            return f"(-{a})"
        if f == "math.sqrt":
            return f"math.sqrt(abs({a}) + 1.0)"
        if f == "np.log1p":
            return f"np.log1p(abs({a}))"
        if f in ("math.exp", "np.exp"):
            return f"{f}(math.tanh({a}))"
        return f"{f}({a})"
    op, left, right = r.choice("+-*/"), _expr(r, depth - 1), _expr(r, depth - 1)
    return f"({left} / (1.5 + math.tanh({right})))" if op == "/" else f"({left} {op} {right})"


def program(seed: int) -> tuple[str, Any, tuple[Any, Any]]:
    """The source of seed ``seed``'s program, its function and its arguments."""
    r = random.Random(seed)
    lines = ["    y = x"] + [f"    y = {_expr(r, 3)}" for _ in range(r.randint(1, 6))] + ["    return y"]
    source = "def f(x, z):\n" + "\n".join(lines) + "\n"
    name = f"<scalar_fuzz {seed}>"
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)  # (zygotepy reads it)
    namespace: dict[str, Any] = {"math": math, "np": np}
    exec(compile(source, name, "exec"), namespace)
    args = (r.choice([0.3, np.float64(0.7), -0.4]), r.choice([1.1, np.float64(-0.2)]))
    return source, namespace["f"], args


def _gradient(f: Any, args: tuple[Any, Any], checks: bool) -> Any:
    try:
        with rc.checking(checks):
            return zp.gradient(f, *args)
    except Exception as err:  # noqa: BLE001 (both ways must fail alike)
        return type(err).__name__


def _agree(a: Any, b: Any) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    for u, v in zip(a, b, strict=True):
        if (u is None) != (v is None) or type(u) is not type(v):
            return False
        if u is not None and not abs(u - v) <= 1e-12 * (1 + abs(v)):
            return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=1000, help="number of programs")
    parser.add_argument("--seed-start", type=int, default=0, help="first seed")
    parser.add_argument("--show", type=int, default=None, help="print one seed's program and gradients")
    opts = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    seeds = [opts.show] if opts.show is not None else range(opts.seed_start, opts.seed_start + opts.n)
    bad = 0
    for seed in seeds:
        source, f, args = program(seed)
        tape, rules = _gradient(f, args, False), _gradient(f, args, True)
        if opts.show is not None or not _agree(tape, rules):
            bad += not _agree(tape, rules)
            print(f"seed {seed}, arguments {args!r}:\n{source}"
                  f"  tape of numbers: {tape!r}\n  rules: {rules!r}")
    print(f"{len(seeds)} programs, {bad} disagreeing")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
