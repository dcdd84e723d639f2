"""Python bytecodes and calls per gradient, per function: where an engine change moves the cost.

Callgrind (``instructions.py``) gives one load-independent total per workload; this script says
which Python functions it comes from, also load-independently: it runs a workload under
``sys.settrace`` with opcode events and counts, per function, the bytecodes executed and the
calls made, for each checkout given (side by side: the base and a branch). A bytecode is not an
instruction (a call or an allocation costs many), so decide on ``instructions.py``; use this to
find what to change. Workloads: those of ``instructions.py`` (``scalar``, ``mlp``, ``hvp``, ...)
and ``gp:<case>``, one ``log_marginal_likelihood`` gradient of ``tests/realworld``'s GP at 200
points (``gp:RBF``, ``gp:WhiteKernel``; needs scikit-learn)::

    python bench/bytecodes.py --source /tmp/base --source . --only scalar,hvp --top 15
    python bench/bytecodes.py --only gp:WhiteKernel --top 30
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile

CHILD = """
import collections, importlib, os, sys
sys.path.insert(0, {source!r})
sys.path.insert(1, {bench!r})
import numpy as np
import zygotepy as zp
workload = {workload!r}
if workload.startswith("gp:"):
    sys.path.insert(2, {root!r})
    from tests.realworld.models import gp_cases
    case = [c for c in gp_cases(200) if c.name == workload[3:] + " log_marginal_likelihood"][0]
    run = lambda: zp.gradient(case.f, case.theta)
elif workload.startswith("wide:"):  # wide:<problem>:<i> (zygotepy's i-th variant) or wide:<problem>:autograd
    import wl_nested_wide
    _, problem, variant = workload.split(":")
    if variant == "autograd":
        run = wl_nested_wide.autograd_cases()[problem]
    else:
        run = list(wl_nested_wide.zygote_cases()[problem].values())[int(variant)]
else:
    import instructions
    with open(os.path.join({tmp!r}, "bytecodes_workload.py"), "w") as fh:
        fh.write("import sys\\n" + instructions.WORKLOADS[workload])
    sys.path.insert(0, {tmp!r})
    space = vars(importlib.import_module("bytecodes_workload"))
    space["zp"] = zp
    space["arg"] = eval(instructions.ARGS.get(workload, "None"), space)
    code = compile(instructions.CALLS.get(workload, "zp.gradient(f, arg)"), "<call>", "eval")
    run = lambda: eval(code, space)
for _ in range(10):
    run()
ops, calls = collections.Counter(), collections.Counter()
def tracer(frame, event, arg):
    frame.f_trace_opcodes = True
    c = frame.f_code
    key = c.co_filename.rsplit("/", 1)[-1] + ":" + c.co_name
    if event == "opcode":
        ops[key] += 1
    elif event == "call":
        calls[key] += 1
    return tracer
sys.settrace(tracer)
run()
sys.settrace(None)
for key, n in ops.items():
    print(n, calls[key], key)
"""


def counts(source: str, workload: str) -> dict[str, tuple[int, int]]:
    """Per function (``file:name``), ``(bytecodes, calls)`` of one call of ``workload``."""
    bench = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "RULESCORE_CHECKS": "0"}
    with tempfile.TemporaryDirectory() as tmp:  # the workload's module (the rewriter reads its source)
        program = CHILD.format(source=source, bench=bench, root=os.path.dirname(bench), workload=workload,
                               tmp=tmp)
        out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env,
                             check=True)
    found: dict[str, tuple[int, int]] = collections.defaultdict(lambda: (0, 0))
    for line in out.stdout.splitlines():
        ops, calls, key = line.split(" ", 2)
        prev = found[key]
        found[key] = (prev[0] + int(ops), prev[1] + int(calls))
    return dict(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", action="append", help="checkout(s) to measure (default: this one)")
    parser.add_argument("--only", default="scalar,mlp")
    parser.add_argument("--top", type=int, default=10, help="functions listed per workload")
    opts = parser.parse_args()
    sources = [os.path.abspath(s) for s in (opts.source or [os.path.join(os.path.dirname(__file__), "..")])]
    for workload in opts.only.split(","):
        found = [counts(src, workload) for src in sources]
        print(f"\n{workload}: " + " | ".join(
            f"{src}: {sum(o for o, _ in f.values())} bytecodes, {sum(c for _, c in f.values())} calls"
            for src, f in zip(sources, found, strict=True)))
        keys = sorted(set().union(*found), key=lambda k: -max(f.get(k, (0, 0))[0] for f in found))
        for key in keys[:opts.top]:
            print("  " + " | ".join(f"{f.get(key, (0, 0))[0]:8d} {f.get(key, (0, 0))[1]:5d}" for f in found)
                  + f"  {key}")


if __name__ == "__main__":
    main()
