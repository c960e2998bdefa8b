"""A fixture shared by the tests of ``n_jobs``: count the ``joblib.Parallel`` objects made."""

import pytest

from skdgm._core import chains


@pytest.fixture
def count_parallel(monkeypatch):
    """A list that grows by one for every ``Parallel`` that ``run_chains`` creates."""
    made = []

    class Counting(chains.Parallel):
        def __init__(self, *args, **kwargs):
            made.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(chains, "Parallel", Counting)
    return made
