"""The cost of traced values a function stores where they outlive the call, in a large process.

A hand-written layer that caches its intermediates (``self.inputs = x``) stores traced values in
an object that outlives the gradient call; the engine replaces them by plain values when the call
ends (``zygotepy._views.release_escaped``). Done by searching the heap, that costs time in
proportion to every live object of the process: this script keeps ``--objects`` small objects
alive and times one gradient (median of ``--repeat``), so checkouts can be compared::

    PYTHONPATH=<checkout> python bench/escaped_heap.py [--objects 300000] [--repeat 21]
"""

from __future__ import annotations

import argparse
import statistics
import time
import types
from typing import Any

import numpy as np

import zygotepy as zp


class CachingLayer:
    def __call__(self, x: np.ndarray) -> Any:
        self.inputs = x
        self.act = np.tanh(x)
        self.out = self.act * x
        return np.sum(self.out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", type=int, default=300_000,
                        help="small objects kept alive (each with a list and a dict)")
    parser.add_argument("--repeat", type=int, default=21)
    opts = parser.parse_args()
    heap = [types.SimpleNamespace(a=[i], b={i: i}) for i in range(opts.objects)]
    layer, x = CachingLayer(), np.linspace(-1.0, 1.0, 10)
    zp.gradient(layer, x)
    times = []
    for _ in range(opts.repeat):
        t0 = time.perf_counter()
        zp.gradient(layer, x)
        times.append(time.perf_counter() - t0)
    assert type(layer.inputs) is np.ndarray  # released: plain after the call
    print(f"{len(heap) * 3:,} objects alive: {statistics.median(times) * 1e3:.2f} ms per gradient (median)")


if __name__ == "__main__":
    main()
