"""zygotepy: differentiate plain Python and NumPy, the way Zygote differentiates Julia.

Every derivative comes from the rulescore registry (plus zygotepy's legacy ``@adjoint`` table);
Python functions without a rule are differentiated through. This module only re-exports.

Example:
    >>> import math, zygotepy as zp
    >>> zp.gradient(lambda x: math.sin(x) * x, 1.0)[0] == math.cos(1.0) + math.sin(1.0)
    True
"""

from zygotepy._adjoint import adjoint
from zygotepy._api import (
    WithJacobian,
    diaghessian,
    forwarddiff,
    hessian,
    hessian_reverse,
    jacobian,
    withjacobian,
)
from zygotepy._errors import NotScalarError, UntraceableError
from zygotepy._explain import explain
from zygotepy._forward import jvp, pushforward
from zygotepy._lib import checkpointed, dropgrad, forward, hook, ignore, isderiving, refresh, showgrad
from zygotepy._reverse import Grads, Params, WithGradient, gradient, params, pullback, withgradient
from zygotepy._transform import ZygoteWarning

__all__ = [
    "Grads", "NotScalarError", "Params", "UntraceableError", "WithGradient", "WithJacobian", "ZygoteWarning",
    "adjoint",
    "checkpointed", "diaghessian", "dropgrad", "explain", "forwarddiff", "hessian", "hessian_reverse", "jvp",
    "pushforward", "forward", "gradient", "hook", "ignore", "isderiving", "jacobian", "params",
    "pullback", "refresh", "showgrad", "withgradient", "withjacobian",
]
__version__ = "0.1.0"
