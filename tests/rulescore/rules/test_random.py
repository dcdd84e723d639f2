"""numpy.random's samplers: non-differentiable, registered on numpy.random's first import (so
``import zygotepy`` does not import it), and in effect when a user samples inside a loss."""

import subprocess
import sys

import numpy as np

import rulescore as rc
import zygotepy as zp

#: The samplers' rule cases (one per sampler, every argument non-differentiable) are in
#: test_shape.py's ``_RANDOM_CASES``, where they were written when shape registered them.
CASES: list[object] = []


def test_importing_the_packages_leaves_numpy_random_and_fft_unimported_until_used():
    code = ("import sys, numpy, zygotepy, rulescore as rc\n"
            "assert 'numpy.random' not in sys.modules, 'numpy.random imported by zygotepy'\n"
            "assert 'numpy.fft' not in sys.modules, 'numpy.fft imported by zygotepy'\n"
            "import numpy as np\n"
            "print(rc.rrule(np.random.normal, 0.0, 1.0)[1](1.0))\n"
            "y, back = rc.rrule(np.fft.rfft, np.ones(3))\n"
            "print(back(np.array([1.0, 0.0])))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["(NoTangent(), NoTangent(), NoTangent())",
                                       "(NoTangent(), array([1., 1., 1.]))"]


def test_sampling_inside_a_loss_gives_no_gradient_through_the_sample():
    rng = np.random.default_rng(0)

    def loss(mu):
        np.random.seed(0)
        noise = np.random.normal(mu, 1.0, size=3)  # not reparameterised: no gradient to mu
        return np.sum(mu * noise) + float(rng.random() > 2.0)

    np.random.seed(0)
    expected = np.random.normal(0.5, 1.0, size=3)
    g, = zp.gradient(loss, 0.5)
    np.testing.assert_allclose(g, np.sum(expected))
    assert rc.rrule.has_rules(np.random.normal)
