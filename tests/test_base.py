import numpy as np
import pytest
import scipy.sparse as sp

from skdgm._core.base import (BaseGenerativeModel, check_binary, check_counts,
                              check_finite_params, iter_minibatches)
from skdgm.exceptions import DivergenceError


class _Toy(BaseGenerativeModel):
    def __init__(self, *, verbose=0):
        self.verbose = verbose

    def fit(self, X, y=None):
        X = self._validate_input(X, reset=True, binary=True)
        self._start_history()
        for it in range(3):
            self._log_iteration(loglik=-1.0 / (it + 1))
        return self

    def score_samples(self, X):
        X = self._validate_input(X, reset=False, binary=True)
        return -X.sum(axis=1)


def test_binary_check_names_the_problem():
    check_binary(np.array([[0, 1], [1, 0]]))
    check_binary(sp.csr_matrix(np.array([[0, 1.0]])))
    with pytest.raises(ValueError, match="binary data"):
        check_binary(np.array([[0, 0.5]]))
    with pytest.raises(ValueError, match="binary data"):
        check_binary(np.array([[0, np.nan]]))
    check_binary(np.array([[0, np.nan]]), allow_nan=True)


def test_count_check_names_the_problem():
    check_counts(sp.csr_matrix(np.array([[0, 3.0]])))
    with pytest.raises(ValueError, match="negative"):
        check_counts(np.array([[0, -1]]))
    with pytest.raises(ValueError, match="non-integer"):
        check_counts(np.array([[0, 1.5]]))
    with pytest.raises(ValueError, match="NaN or inf"):
        check_counts(sp.csr_matrix(np.array([[0, np.inf]])))


def test_finite_guard():
    check_finite_params({"W": np.ones(3), "layers": [np.zeros(2)]}, "update")
    with pytest.raises(DivergenceError, match="'layers' became non-finite"):
        check_finite_params({"layers": [np.zeros(2), np.array([np.nan])]}, "update")
    for bad in (np.inf, -np.inf):
        with pytest.raises(DivergenceError, match="'W' became non-finite"):
            check_finite_params({"W": np.array([[1.0, bad], [0.0, 2.0]])}, "update")
    with pytest.raises(DivergenceError, match="grew beyond 5"):
        check_finite_params({"W": np.array([1.0, -6.0])}, "update", bound=5.0)
    check_finite_params({"W": np.array([1.0, -5.0]), "e": np.zeros(0)}, "update", bound=5.0)


def test_minibatches_cover_rows_once():
    rows = np.concatenate([np.arange(10)[s] for s in iter_minibatches(10, 3)])
    np.testing.assert_array_equal(rows, np.arange(10))
    rng = np.random.default_rng(0)
    rows = np.concatenate(list(iter_minibatches(10, 4, rng)))
    np.testing.assert_array_equal(np.sort(rows), np.arange(10))
    assert list(iter_minibatches(0, 4)) == []


@pytest.mark.parametrize("n, batch", [(201, 200), (10, 3), (23, 10), (400, 200), (7, 100),
                                      (1, 1), (11284, 200)])
def test_minibatches_are_near_equal_and_never_a_sliver(n, batch):
    # The samplers scale a minibatch by n_total / len(minibatch): a tail of one
    # row would stand for the whole data set (issue 15).
    sizes = [s.stop - s.start for s in iter_minibatches(n, batch)]
    assert sum(sizes) == n and len(sizes) == -(-n // batch)
    assert max(sizes) <= batch and max(sizes) - min(sizes) <= 1
    shuffled = [len(i) for i in iter_minibatches(n, batch, np.random.default_rng(1))]
    assert shuffled == sizes


def test_history_verbose_and_score(capsys):
    X = np.array([[0, 1], [1, 1.0]])
    toy = _Toy(verbose=1).fit(X)
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 3
    assert out[2].startswith("[_Toy] Iteration 3, loglik = -0.3333, time = ")
    assert toy.n_iter_ == 3 and toy.history_["loglik"][0] == -1.0
    assert len(toy.history_["time"]) == 3
    assert toy.score(X) == pytest.approx(-1.5)
    with pytest.raises(ValueError, match="features"):
        toy.score_samples(np.ones((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        toy.fit(np.array([[np.nan, 1.0]]))
