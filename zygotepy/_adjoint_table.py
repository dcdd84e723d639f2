"""zygotepy's own rule table, for legacy ``@adjoint`` definitions (see :mod:`zygotepy._adjoint`)."""

import rulescore as rc


class AdjointTable(rc.RuleTable):
    """The table of legacy adjoints; ``active`` once one is defined, so the dispatcher can skip it
    (``version``, as every table's, counts definitions: the dispatcher's caches look again)."""

    active = False

    def declare(self, pair: rc.RulePair, family: str | None = None) -> None:
        super().declare(pair, family)
        self.active = True


ADJOINTS = AdjointTable("adjoint")
