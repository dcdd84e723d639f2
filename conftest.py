"""Root conftest: checking mode on before rulescore is imported (doctests included), and the
rulescore pytest plugin enabled for this suite (it is opt-in: no entry point installs it)."""

import os

os.environ.setdefault("RULESCORE_CHECKS", "1")

pytest_plugins = ["rulescore.testing.plugin"]
