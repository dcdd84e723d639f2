"""rulescore: differentiation rules that any Python AD system can read.

The Python counterpart of ChainRulesCore.jl: tangent types, ``ProjectTo``, the ``rrule`` /
``frule`` registry and a rule library for Python operators, ``math``, builtins and NumPy.
This module only re-exports; the implementation lives in private modules.

Example:
    >>> import math, rulescore as rc
    >>> y, back = rc.rrule(math.sin, 0.5)
    >>> round(back(1.0)[1], 6) == round(math.cos(0.5), 6)
    True
"""

from rulescore import rules as rules  # registers the rule library
from rulescore._arithmetic import add, add_to_primal, conj, is_zero, scale, sub
from rulescore._batched import Batched, NotBatchable
from rulescore._checks import RuleError, checking, checks_enabled
from rulescore._config import (
    HasForwardsMode,
    HasReverseMode,
    NoForwardsMode,
    NoReverseMode,
    RuleConfig,
    frule_via_ad,
    rrule_via_ad,
)
from rulescore._helpers import (
    ignore_derivatives,
    non_differentiable,
    non_differentiable_rules,
    partials_rules,
    scalar_rule,
)
from rulescore._linear import deflinear, linear_rules
from rulescore._namespace import array_namespace
from rulescore._not_implemented import NotImplementedTangent, not_implemented
from rulescore._parameters import declare_parameters, parameters_of
from rulescore._projection import ProjectionError, ProjectTo, project, unbroadcast
from rulescore._registry import HANDLING_KINDS, AmbiguousRuleError, Rule, RuleTable, frule, rrule, unbind
from rulescore._rule_pair import RulePair, register_rules
from rulescore._structural import carries_no_derivative, is_structural, structural
from rulescore._structure import fields_of, rebuild
from rulescore._tangent import Tangent
from rulescore._thunks import InplaceableThunk, Thunk, unthunk
from rulescore._tree import tree_add, tree_flatten, tree_leaves, tree_map, tree_scale, tree_sub, zero_like
from rulescore._zeros import AbstractZero, NoTangent, ZeroTangent

__all__ = [
    "HANDLING_KINDS",
    "AbstractZero", "AmbiguousRuleError", "Batched", "HasForwardsMode", "HasReverseMode", "InplaceableThunk",
    "NoForwardsMode", "NoReverseMode", "NoTangent", "NotBatchable", "NotImplementedTangent",
    "not_implemented", "ProjectTo", "ProjectionError", "Rule",
    "RuleConfig", "RuleError", "RuleTable", "Tangent", "Thunk", "ZeroTangent", "add",
    "add_to_primal", "array_namespace", "checking", "checks_enabled", "conj", "declare_parameters",
    "deflinear", "fields_of",
    "frule", "frule_via_ad", "ignore_derivatives", "is_zero", "linear_rules", "non_differentiable",
    "non_differentiable_rules", "parameters_of", "partials_rules", "project", "register_rules", "RulePair",
    "rebuild", "rrule",
    "rrule_via_ad", "rules", "scalar_rule", "scale", "sub", "tree_add", "tree_flatten", "tree_leaves",
    "tree_map", "tree_scale", "tree_sub", "unbind", "unbroadcast", "unthunk", "zero_like",
    "carries_no_derivative", "is_structural", "structural",
]
__version__ = "0.1.0"
