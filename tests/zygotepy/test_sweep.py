"""The differentiation sweep (``bench/sweep.py``) published in docs/rules.md: no gradient
disagrees with finite differences, every refusal has a reason, and the table is current.

The sweep runs in a fresh interpreter (rules that other tests register must not leak into it).
By default a deterministic 1-in-``SAMPLE`` subset of the functions is differentiated again and
compared with the published rows; ``ZYGOTEPY_FULL_SWEEP=1`` runs every function (about half a
minute on an idle machine) and compares the whole page.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("scipy")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import sweep  # noqa: E402

SAMPLE = 6
FULL = os.environ.get("ZYGOTEPY_FULL_SWEEP") == "1"
STALE = f"docs/rules.md's sweep is out of date; regenerate it with\n\n    {sweep.COMMAND}\n"


def _run(*args: str) -> str:
    done = subprocess.run([sys.executable, "bench/sweep.py", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_published_sweep_has_no_wrong_gradient_and_a_reason_for_every_refusal():
    published = sweep.published_rows()
    assert len(published) > 900
    bad = {name: row for name, row in published.items() if row[0] in ("WRONG", "ERROR")}
    assert not bad, bad
    assert all(detail for _, detail in published.values())
    counts = {kind: sum(1 for o, _ in published.values() if o == kind) for kind in ("rule", "traced")}
    assert counts["rule"] > 250 and counts["traced"] > 30, counts


def test_the_published_sweep_covers_every_public_function():
    names = [name for _, name in json.loads(_run("--names"))]
    assert names == list(sweep.published_rows()), STALE


@pytest.mark.skipif(FULL, reason="the full sweep below compares every row")
def test_a_sample_of_the_sweep_differentiates_as_published():
    published = sweep.published_rows()
    fresh = json.loads(_run("--rows", str(SAMPLE)))
    assert len(fresh) > 100
    wrong = [row for row in fresh if row[2] in ("WRONG", "ERROR")]
    assert not wrong, wrong
    stale = [(name, published.get(name), (outcome, detail)) for _, name, outcome, detail in fresh
             if published.get(name) != (outcome, detail.replace("|", "/"))]
    assert not stale, STALE + "\n".join(map(str, stale[:20]))


@pytest.mark.skipif(not FULL, reason="set ZYGOTEPY_FULL_SWEEP=1 to run every function")
def test_the_full_sweep_is_published():
    assert _run() == sweep.published(), STALE
