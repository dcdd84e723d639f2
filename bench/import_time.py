"""How long ``import zygotepy`` takes beyond ``import numpy``: medians over fresh processes.

Each run is a new interpreter that imports numpy, then zygotepy, and reports both the wall
figures of ``python -X importtime`` (cumulative microseconds of the two top-level imports) and
the process CPU time of each step (steadier on a shared machine). Bytecode is cached outside
the repository (``PYTHONPYCACHEPREFIX``) and warmed first, as an installed package's is.

    python bench/import_time.py [-n 15]
"""

from __future__ import annotations

import argparse
import os
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=15, help="number of fresh processes")
    for key, value in measure(parser.parse_args().n).items():
        print(f"{key}: {value:.1f} ms (median)")


if __name__ == "__main__":
    main()
