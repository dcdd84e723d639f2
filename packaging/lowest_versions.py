"""Print pip constraints pinning rulescore's dependencies and the given users' extras to the lower
bound of their ranges in pyproject.toml: ``.ci/run`` installs them into a virtual environment of
their own and runs the tests those packages serve (the suite itself runs at the versions the
``test`` extra pins, the upper end of each range).

    python packaging/lowest_versions.py jax autograd > lowest.txt
    pip install -c lowest.txt '.[jax,autograd]'

Every requirement read must have a ``>=`` bound: a range without a lower end is an error.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import tomllib

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def lowest_pins(extras: list[str], pyproject: Path = PYPROJECT) -> list[str]:
    """``name==lower`` for each of rulescore's dependencies and each requirement of ``extras``."""
    project = tomllib.loads(pyproject.read_text())["project"]
    requirements = list(project["dependencies"])
    for extra in extras:
        requirements += project["optional-dependencies"][extra]
    pins = []
    for requirement in requirements:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)(\[[^\]]*\])?\s*(.*)", requirement.split(";")[0].strip())
        lower = re.search(r">=\s*([^,\s]+)", match.group(3)) if match else None
        if match is None or lower is None:
            raise SystemExit(f"pyproject.toml: {requirement!r} has no lower bound (>=) to test")
        pins.append(f"{match.group(1)}=={lower.group(1)}")
    return pins


if __name__ == "__main__":
    print("\n".join(lowest_pins(sys.argv[1:])))
