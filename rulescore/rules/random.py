"""``numpy.random``: random numbers have no derivative with respect to the distribution's
parameters here (no reparameterisation), so every sampler is non-differentiable.

Importing ``numpy.random`` costs more than the rest of the rule library together, and NumPy
imports it only on first use, so this family is imported and registered when it is first
imported (hooked up by :mod:`rulescore.rules`), never before.

Example:
    >>> import numpy as np, rulescore as rc
    >>> y, back = rc.rrule(np.random.normal, 0.0, 1.0)
    >>> back(1.0)
    (NoTangent(), NoTangent(), NoTangent())
"""

from __future__ import annotations

import numpy.random as npr

from rulescore import RulePair

#: The samplers (and seeding, generator construction): no derivative.
SAMPLERS = (
    npr.beta, npr.binomial, npr.chisquare, npr.choice, npr.dirichlet, npr.exponential, npr.gamma,
    npr.geometric, npr.gumbel, npr.laplace, npr.logistic, npr.lognormal, npr.multinomial,
    npr.multivariate_normal, npr.normal, npr.permutation, npr.poisson, npr.rand, npr.randint, npr.randn,
    npr.random, npr.random_sample, npr.rayleigh, npr.seed, npr.shuffle, npr.standard_cauchy,
    npr.standard_exponential, npr.standard_gamma, npr.standard_normal, npr.standard_t, npr.triangular,
    npr.uniform, npr.vonmises, npr.wald, npr.weibull, npr.default_rng,
)

RULES: tuple[RulePair, ...] = tuple(RulePair(f, kind="non_differentiable") for f in SAMPLERS)
