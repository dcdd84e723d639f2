"""Where the MLP's time goes, by shared library: BLAS, NumPy's C code, the Python interpreter.

``perf record -e cpu-clock`` (a software clock: it works in VMs without hardware counters)
samples one process per checkout and gradient (``hand``: ``wl_mlp.loss_grad``, ``floor``:
``wl_mlp.minimal_tape_grad``, ``zp``: ``zp.gradient(wl_mlp.loss, ...)``) running N calls at
a given width, and the samples are summed by library: time per call that is BLAS, NumPy's C
code, the interpreter (``libpython``: every Python bytecode, the engine's and the rules') and
the rest (libc, the kernel). An import-only process is subtracted, so each figure is the calls'
own. It says whether the gap to hand-written NumPy is array work (BLAS, NumPy) or Python::

    python bench/mlp_split.py --source /tmp/base --source . --width 256 -n 3000
    python bench/mlp_split.py --source . --width 4 -n 30000
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

CHILD = """
import sys, time
sys.path.insert(0, {source!r})
sys.path.insert(1, {bench!r})
import _env
_env.pin()
import wl_mlp
wl_mlp.WIDTH = {width}
import zygotepy as zp
params, X, Y = wl_mlp.make_data()
calls = {{"hand": lambda: wl_mlp.loss_grad(params, X, Y),
          "floor": lambda: wl_mlp.minimal_tape_grad(params, X, Y),
          "zp": lambda: zp.gradient(wl_mlp.loss, params, X, Y, argnums=0),
          "none": lambda: None}}
f = calls[{which!r}]
for _ in range(20):
    f()
for _ in range({n} if {which!r} != "none" else 0):
    f()
"""
GROUPS = (("blas", "openblas"), ("numpy", "_multiarray_umath"), ("python", "libpython"))
RATE = 2000  # samples per second


def _samples(source: str, which: str, width: int, n: int) -> dict[str, int]:
    bench = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        code = CHILD.format(source=os.path.abspath(source), bench=bench, width=width, which=which, n=n)
        subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(RATE), "-o", data,
                        sys.executable, "-c", code], check=True, capture_output=True)
        report = subprocess.run(["perf", "report", "-i", data, "--sort", "dso", "-n", "--stdio"],
                                check=True, capture_output=True, text=True).stdout
    out = dict.fromkeys([g for g, _ in GROUPS] + ["other"], 0)
    for line in report.splitlines():
        parts = line.split()
        if line.startswith("#") or len(parts) < 3 or not parts[1].isdigit():
            continue
        group = next((g for g, key in GROUPS if key in parts[2]), "other")
        out[group] += int(parts[1])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", action="append", default=None, help="a checkout (default: this one)")
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("-n", type=int, default=3000, help="gradient calls per process")
    args = parser.parse_args()
    sources = args.source or [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
    print(f"width {args.width}, {args.n} calls per process; ms per call (perf cpu-clock samples)")
    print("| checkout | gradient | BLAS | NumPy C | Python | other | total |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for source in sources:
        base = _samples(source, "none", args.width, args.n)
        for which in ("hand", "floor", "zp"):
            s = _samples(source, which, args.width, args.n)
            ms = {k: max(s[k] - base[k], 0) / RATE / args.n * 1e3 for k in s}
            cells = " | ".join(f"{ms[k]:.3f}" for k in ("blas", "numpy", "python", "other"))
            print(f"| {source} | {which} | {cells} | {sum(ms.values()):.3f} |")


if __name__ == "__main__":
    main()
