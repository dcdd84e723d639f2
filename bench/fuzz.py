"""Run the program fuzzer on a range of seeds and count how zygotepy did.

Usage (from the repository root):

    python bench/fuzz.py -n 10000 --seed-start 0          # ten thousand programs, seeds 0..9999
    python bench/fuzz.py -n 200 --exclude inplace_view    # leave a feature family out
    python bench/fuzz.py --show 1234                      # print the program of seed 1234 and its outcome

Each program is reproducible from its seed (tests/zygotepy/program_fuzzer.py). Prints counts:
right / wrong / refused (by reason) / crashed / rejected (the program's own finite differences are
unstable, or it fails in plain NumPy), with the seed range, then the seed and source of every wrong
or crashed program (``--failures FILE`` writes them all to a file). Exit status 1 if any program
was wrong or crashed.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests.zygotepy.program_fuzzer import FEATURES, KNOWN_OPEN, check, program_from_seed  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=1000, help="number of programs")
    parser.add_argument("--seed-start", type=int, default=0, help="first seed")
    parser.add_argument("--exclude", default="", help="comma-separated feature families to leave out")
    parser.add_argument("--show", type=int, help="print one seed's program and outcome, then stop")
    parser.add_argument("--failures", help="write every wrong/crashed program to this file")
    parser.add_argument("--shown", type=int, default=5, help="failures printed in full (default 5)")
    opts = parser.parse_args(argv)
    excluded = {f for f in opts.exclude.split(",") if f}
    unknown = excluded - set(FEATURES)
    if unknown:
        parser.error(f"unknown features {sorted(unknown)}; known: {', '.join(FEATURES)}")
    features = frozenset(FEATURES) - excluded
    if opts.show is not None:
        print(check(program_from_seed(opts.show, features)).report())
        return 0
    counts: collections.Counter[str] = collections.Counter()
    reasons: collections.Counter[str] = collections.Counter()
    by_feature: collections.Counter[str] = collections.Counter()
    failures = []
    start = time.perf_counter()
    last = opts.seed_start + opts.n - 1
    for seed in range(opts.seed_start, opts.seed_start + opts.n):
        outcome = check(program_from_seed(seed, features))
        counts[outcome.kind] += 1
        if outcome.kind in ("refused", "rejected", "crashed", "wrong"):
            reasons[f"{outcome.kind}: {outcome.reason}"] += 1
        if outcome.kind in ("wrong", "crashed"):
            failures.append(outcome)
            by_feature.update(outcome.program.features)
        done = seed - opts.seed_start + 1
        if done % 500 == 0:
            print(f"  {done} programs, {time.perf_counter() - start:.0f} s: {dict(counts)}", file=sys.stderr)
    elapsed = time.perf_counter() - start
    print(f"seeds {opts.seed_start}..{last} ({opts.n} programs, {elapsed:.0f} s)"
          + (f", excluding {','.join(sorted(excluded))}" if excluded else ""))
    for kind in ("right", "wrong", "refused", "crashed", "rejected"):
        print(f"{kind:>9}: {counts[kind]}")
    for reason, count in reasons.most_common():
        print(f"    {count:6d}  {reason}")
    open_features = ", ".join(sorted(KNOWN_OPEN))
    outside = [o for o in failures if not o.program.features & set(KNOWN_OPEN) and not o.known()]
    print(f"wrong or crashed, leaving out programs using known-open features ({open_features}) and "
          f"known crashes (KNOWN_CRASHES): {len(outside)}")
    if by_feature:
        print("features in failing programs: " + ", ".join(f"{f} {c}" for f, c in by_feature.most_common()))
    for outcome in failures[: opts.shown]:
        print("\n" + outcome.report())
    if opts.failures:
        with open(opts.failures, "w") as out:
            out.write("\n\n".join(o.report() for o in failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
