"""Errors the engine raises: each names the function, the argument and what to do."""


class UntraceableError(TypeError):
    """Differentiated code reached something the engine cannot see into (a compiled routine
    given a traced value, or a traced value converted to a plain number/array there)."""


class NotScalarError(TypeError):
    """``gradient`` was given a function whose output is not a real scalar."""
