"""How long ``import zygotepy`` takes beyond ``import numpy``: medians over fresh processes.

Each run is a new interpreter that imports numpy, then zygotepy, and reports both the wall
figures of ``python -X importtime`` (cumulative microseconds of the two top-level imports) and
the process CPU time of each step (steadier on a shared machine). Bytecode is cached outside
the repository (``PYTHONPYCACHEPREFIX``) and warmed first, as an installed package's is.

    python bench/import_time.py [-n 15]
    python bench/import_time.py --instructions   # callgrind's count: repeatable on a loaded machine

``--instructions`` counts the instructions of two whole processes under ``valgrind --tool=callgrind``
(``import numpy``, then ``import numpy; import zygotepy``) at two fixed hash seeds and reports the
difference: on a shared machine, where wall and CPU times move by tens of percent, it compares two
checkouts (``PYTHONPATH=<checkout>``) reliably.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

CHILD = (
    "import time\n"
    "t0 = time.process_time(); import numpy; t1 = time.process_time()\n"
    "import zygotepy; t2 = time.process_time()\n"
    "print((t1 - t0) * 1e3, (t2 - t1) * 1e3)\n"
)


def measure(runs: int) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "zygotepy-import-time-pycache")
    subprocess.run([sys.executable, "-c", "import zygotepy"], env=env, check=True)  # warm the bytecode
    wall_np, wall_zp, cpu_np, cpu_zp = [], [], [], []
    for _ in range(runs):
        run = subprocess.run([sys.executable, "-X", "importtime", "-c", CHILD], env=env, check=True,
                             capture_output=True, text=True)
        cum = {line.rsplit("|", 1)[1].strip(): int(line.split("|")[1]) for line in run.stderr.splitlines()
               if line.startswith("import time:") and "|" in line and line.split("|")[1].strip().isdigit()}
        wall_np.append(cum["numpy"] / 1e3)
        wall_zp.append(cum["zygotepy"] / 1e3)
        a, b = map(float, run.stdout.split())
        cpu_np.append(a)
        cpu_zp.append(b)
    return {"wall numpy": statistics.median(wall_np),
            "wall zygotepy beyond numpy": statistics.median(wall_zp),
            "cpu numpy": statistics.median(cpu_np),
            "cpu zygotepy beyond numpy": statistics.median(cpu_zp)}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "zygotepy-import-time-pycache")
    return env


def instructions(code: str, seed: int) -> int:
    """The instructions callgrind counts for ``python -c code`` at hash seed ``seed``."""
    env = {**_env(), "PYTHONHASHSEED": str(seed)}
    run = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                          "-c", code], env=env, check=True, capture_output=True, text=True)
    found = re.search(r"Collected : (\d+)", run.stderr)
    if found is None:
        raise RuntimeError(f"callgrind reported no count:\n{run.stderr[-2000:]}")
    return int(found[1])


def measure_instructions(seeds: tuple[int, ...] = (1, 2)) -> dict[str, float]:
    """Millions of instructions of ``import numpy`` and of ``import zygotepy`` beyond it (medians
    over ``seeds``)."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind")
    subprocess.run([sys.executable, "-c", "import zygotepy"], env=_env(), check=True)  # warm the bytecode
    numpy_only = [instructions("import numpy", s) for s in seeds]
    both = [instructions("import numpy; import zygotepy", s) for s in seeds]
    beyond = [b - a for a, b in zip(numpy_only, both, strict=True)]
    return {"instructions numpy (M)": statistics.median(numpy_only) / 1e6,
            "instructions zygotepy beyond numpy (M)": statistics.median(beyond) / 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=15, help="number of fresh processes")
    parser.add_argument("--instructions", action="store_true", help="count instructions with callgrind")
    args = parser.parse_args()
    if args.instructions:
        for key, value in measure_instructions().items():
            print(f"{key}: {value:.1f}")
        return
    for key, value in measure(args.n).items():
        print(f"{key}: {value:.1f} ms (median)")


if __name__ == "__main__":
    main()
