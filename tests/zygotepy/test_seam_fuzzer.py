"""The seam fuzzer in the suite: generated programs reaching traced values through every protocol
Python runs implicitly, on classes of another module, with non-numeric arguments choosing the
branch; a few run as ``python -c``. The ten thousand program run is ``python bench/seam_fuzz.py
-n 10000``."""

import pytest

from tests.zygotepy import seam_fuzzer as sf


@pytest.mark.parametrize("seed", range(64))
def test_seam_programs_differentiate_exactly_or_refuse(seed):
    outcome = sf.check(sf.seam_program_from_seed(seed, cli_every=32))
    assert outcome.kind in ("right", "refused", "rejected"), outcome.report()


def test_every_protocol_is_generated():
    assert {sf.seam_program_from_seed(seed).protocol for seed in range(64)} == set(sf.PROTOCOLS)


