"""The Examples sections of the estimators' docstrings run as part of the normal suite.

Each estimator module's doctests must run (``attempted > 0``, so a module whose
examples disappear fails here) and pass.
"""

import doctest
import importlib

import pytest

MODULES = [
    "skdgm.sbn._estimator",
    "skdgm.deep_lda._estimator",
    "skdgm.dbm._estimator",
    "skdgm.grbm._estimator",
]


@pytest.mark.parametrize("name", MODULES)
def test_estimator_doctests(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             verbose=False, report=True)
    assert result.attempted > 0, f"{name} has no doctests"
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctests failed in {name}"


def test_doctests_can_fail():
    """A wrong expected output is reported as a failure (the test above can fail)."""
    import types
    fake = types.ModuleType("fake_estimator")
    exec('def f():\n    """\n    >>> 1 + 1\n    3\n    """\n', fake.__dict__)
    result = doctest.testmod(fake, report=False)
    assert (result.attempted, result.failed) == (1, 1)
