"""NumPy functions that read only an array's shape or memory, with no derivative: the index
builders ``np.diag_indices_from``, ``np.tril_indices_from`` and ``np.triu_indices_from``, and
``np.shares_memory`` and ``np.may_share_memory`` (SciPy's ``CubicSpline`` asks them).

Without a rule an engine differentiates through their Python source whenever the array is
traced (scikit-learn's ``K[np.diag_indices_from(K)] += alpha`` on every likelihood), to find
that the result is constant.

Example:
    >>> import numpy as np, rulescore as rc
    >>> rc.rrule.has_rules(np.diag_indices_from)
    True
    >>> rows, back = rc.rrule(np.diag_indices_from, np.ones((2, 2)))
    >>> rows, back(None)
    ((array([0, 1]), array([0, 1])), (NoTangent(), NoTangent()))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rulescore._rule_pair import RulePair
from rulescore.rules._common import family_rules

#: Functions of an array's shape or memory alone.
NON_DIFFERENTIABLE: tuple[Any, ...] = (np.diag_indices_from, np.tril_indices_from, np.triu_indices_from,
                                       np.shares_memory, np.may_share_memory)

RULES: tuple[RulePair, ...] = family_rules(non_differentiable=NON_DIFFERENTIABLE)

__all__ = ["NON_DIFFERENTIABLE", "RULES"]
