"""``numpy.random``: random numbers have no derivative with respect to the distribution's
parameters here (no reparameterisation), so every sampler is non-differentiable.

Importing ``numpy.random`` costs more than the rest of the rule library together, and NumPy
imports it only on first use, so these rules are registered when it is first imported
(:func:`register_random`, hooked up by :mod:`rulescore.rules`), never before.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from rulescore._helpers import non_differentiable_rules
from rulescore._rule_pair import register_rules

SAMPLERS = (
    "beta", "binomial", "chisquare", "choice", "dirichlet", "exponential", "gamma", "geometric",
    "gumbel", "laplace", "logistic", "lognormal", "multinomial", "multivariate_normal", "normal",
    "permutation", "poisson", "rand", "randint", "randn", "random", "random_sample", "rayleigh",
    "seed", "shuffle", "standard_cauchy", "standard_exponential", "standard_gamma",
    "standard_normal", "standard_t", "triangular", "uniform", "vonmises", "wald", "weibull",
    "default_rng",
)

#: The samplers registered, once ``numpy.random`` is imported (the rule table lists them here).
REGISTERED: tuple[Any, ...] = ()


def register_random(module: ModuleType) -> None:
    """Register the samplers of ``module`` (``numpy.random``) as non-differentiable.

    Example:
        >>> import numpy as np, rulescore as rc
        >>> y, back = rc.rrule(np.random.normal, 0.0, 1.0)
        >>> back(1.0)
        (NoTangent(), NoTangent(), NoTangent())
    """
    global REGISTERED
    REGISTERED = tuple(getattr(module, name) for name in SAMPLERS if hasattr(module, name))
    register_rules(*(non_differentiable_rules(f) for f in REGISTERED))
