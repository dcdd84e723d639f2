"""``bench/chaos.py`` at its small size: interrupts at random moments of every entry point, threads
differentiating while rules are re-registered and cyclic garbage piles up, deep recursion and bad
rules, with the engine's state checked after each (issue 27). ``python bench/chaos.py`` runs it
at full size."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs signal.setitimer")
def test_the_chaos_suite_finds_no_leaked_state_wrong_result_or_stale_rule():
    done = subprocess.run([sys.executable, "bench/chaos.py", "--small"], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    summary = done.stdout.splitlines()[-1]
    assert "2,000 interrupts" in summary and "0 leaked states, 0 wrong results, 0 stale rules" in summary
