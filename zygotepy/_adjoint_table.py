"""zygotepy's own rule table, for legacy ``@adjoint`` definitions (see :mod:`zygotepy._adjoint`)."""

import rulescore as rc


class AdjointTable(rc.RuleTable):
    """The table of legacy adjoints; falsy while empty so the dispatcher can skip it."""

    def __bool__(self) -> bool:
        return bool(self._by_callable)


ADJOINTS = AdjointTable("adjoint")
