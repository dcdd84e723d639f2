"""zygotepy's own rule table, for legacy ``@adjoint`` definitions (see :mod:`zygotepy._adjoint`)."""

import rulescore as rc


class AdjointTable(rc.RuleTable):
    """The table of legacy adjoints; ``active`` once one is defined, so the dispatcher can skip it;
    ``version`` counts definitions, so the dispatcher's caches know when to look again."""

    active = False
    version = 0

    def _add(self, rule: rc.Rule) -> None:
        super()._add(rule)
        self.active = True
        self.version += 1


ADJOINTS = AdjointTable("adjoint")
