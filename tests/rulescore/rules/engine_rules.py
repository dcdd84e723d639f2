"""Rules that ask for the engine's config (``odeint``, ``quad``, the ``scipy.optimize`` solvers
call back into the AD system for the user's function), tested with zygotepy as that system."""

from __future__ import annotations

from typing import Any

import rulescore as rc
import rulescore.testing as rct
from zygotepy._forward import FORWARD_CONFIG
from zygotepy._reverse import CONFIG

#: hypothesis examples per case: each runs solvers and finite differences of them
EXAMPLES = 3


def engine_rrule(f: Any, *args: Any, **kwargs: Any) -> Any:
    """``rc.rrule`` as zygotepy's reverse mode calls it (with its config)."""
    return rc.rrule(CONFIG, f, *args, **kwargs)


def engine_frule(tangents: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
    """``rc.frule`` as zygotepy's forward mode calls it."""
    return rc.frule(FORWARD_CONFIG, tangents, f, *args, **kwargs)


def check_engine_rule(f: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None,
                      frule: bool = True, rtol: float = 1e-5, atol: float = 1e-7) -> None:
    """``rct.check_rule`` with the engine's configs: rrule, frule and their agreement."""
    rct.check_rule(f, args, kwargs, frule=frule, rtol=rtol, atol=atol, max_examples=EXAMPLES,
                   rrule_f=engine_rrule, frule_f=engine_frule)
