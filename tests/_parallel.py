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


@pytest.fixture
def count_threads(monkeypatch):
    """A list that grows by ``(tasks, n_workers)`` for every call that ``run_chains``
    hands its thread workers (:func:`skdgm._core.chains._run_threads`)."""
    calls = []
    real = chains._run_threads

    def counting(func, tasks, seeds, kwargs, n_workers):
        calls.append((list(tasks), n_workers))
        return real(func, tasks, seeds, kwargs, n_workers)

    monkeypatch.setattr(chains, "_run_threads", counting)
    return calls
