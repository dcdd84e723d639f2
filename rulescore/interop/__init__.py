"""Rules registered once, used by other AD systems: ``rulescore.interop.jax``, ``.torch``, ``.autograd``.

Each submodule needs its extra (``pip install 'rulescore[jax]'`` and so on) and is imported
only when used; ``wrap(f)`` in each gives ``f`` with derivatives from its registered rules.
See ``docs/interop.md``.
"""
