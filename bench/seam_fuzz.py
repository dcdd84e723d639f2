"""Run the seam fuzzer (tests/zygotepy/seam_fuzzer.py) on a range of seeds and count how zygotepy did.

Usage (from the repository root):

    python bench/seam_fuzz.py -n 10000 --cli-every 100     # ten thousand programs, 1 in 100 as python -c
    python bench/seam_fuzz.py --show 1234                   # one seed's program and outcome

Each program reaches its traced values through one of the protocols Python runs implicitly, on a
class defined in another module, and takes an enum and a sentinel that choose its branch. Prints
right / wrong / refused / crashed / rejected counts, per protocol, then every wrong or crashed
program. Exit status 1 if any program was wrong or crashed.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests.zygotepy.seam_fuzzer import check, seam_program_from_seed  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=1000, help="number of programs")
    parser.add_argument("--seed-start", type=int, default=0, help="first seed")
    parser.add_argument("--cli-every", type=int, default=100, help="run every k-th program as python -c")
    parser.add_argument("--show", type=int, help="print one seed's program and outcome, then stop")
    opts = parser.parse_args(argv)
    if opts.show is not None:
        print(check(seam_program_from_seed(opts.show, opts.cli_every)).report())
        return 0
    counts: collections.Counter[str] = collections.Counter()
    by_protocol: collections.Counter[tuple[str, str]] = collections.Counter()
    failures = []
    start = time.perf_counter()
    for seed in range(opts.seed_start, opts.seed_start + opts.n):
        program = seam_program_from_seed(seed, opts.cli_every)
        outcome = check(program)
        counts[outcome.kind] += 1
        by_protocol[program.protocol, outcome.kind] += 1
        if outcome.kind in ("wrong", "crashed"):
            failures.append(outcome)
    elapsed = time.perf_counter() - start
    print(f"seeds {opts.seed_start}..{opts.seed_start + opts.n - 1}, 1 in {opts.cli_every} as python -c, "
          f"{elapsed:.0f} s")
    for kind in ("right", "wrong", "refused", "crashed", "rejected"):
        print(f"  {kind:9s} {counts[kind]}")
    kinds = ("right", "wrong", "refused", "crashed", "rejected")
    for protocol in sorted({p for p, _ in by_protocol}):
        print(f"  {protocol:24s} " + ", ".join(f"{k} {by_protocol[protocol, k]}" for k in kinds))
    for outcome in failures[:5]:
        print(outcome.report())
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
