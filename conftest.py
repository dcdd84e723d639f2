"""Root conftest: checking mode on before rulescore is imported (doctests included)."""

import os

os.environ.setdefault("RULESCORE_CHECKS", "1")
