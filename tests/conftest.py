"""Shared test setup: rule checking mode is on for the whole suite."""

import os

os.environ.setdefault("RULESCORE_CHECKS", "1")
