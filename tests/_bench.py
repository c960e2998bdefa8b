"""Importing a script of ``benchmarks/`` in a test, as the script itself imports its
neighbours (``_common.py``): with that folder on ``sys.path`` while it loads."""

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def bench_module(name):
    """The module of ``benchmarks/<name>.py``, freshly loaded."""
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(BENCH))
