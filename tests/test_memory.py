"""What a fit holds beside its data: no full-size temporaries on large inputs.

A million MNIST rows (3.1 GB in float32) peaked at 12.9 GB in DBMCAST's fit, 7.7 GB
in GaussianBernoulliRBM's (2.6 GB of float32 data) and 9.4 GB in BayesianSBN's
(``benchmarks/results/defaults_convergence_*_1m.txt``): the greedy stack sampled
every row's hidden layers at once (and the top layer's, which nothing reads), the
GRBM took ``abs`` of the whole data every pass, and BayesianSBN's streaming
inferences copied float32 data to float64; and DBMCAST and the GRBM copied their
training rows when early stopping held out a slice (now a ``RowView``). Each fix
keeps the fit's results bit for bit on dense rows (tested here), and the peaks are measured with ``tracemalloc`` against the
data's bytes, on models small enough for the suite.
"""

import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit

from skdgm import DBMCAST, BayesianSBN, GaussianBernoulliRBM
from skdgm._core import stopping
from skdgm._core.base import dense_rows
from skdgm._core.blocks import RowView, column_means, gather_rows, max_abs
from skdgm._core.mcmc import bernoulli
from skdgm.dbm import _pretrain_blocks


def _peak_over(fit, nbytes):
    """Peak traced bytes during ``fit()`` above those before it, in units of ``nbytes``."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit()
        return (tracemalloc.get_traced_memory()[1] - before) / nbytes
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("sparse", [False, True])
def test_sample_up_in_chunks_draws_what_one_call_draws(monkeypatch, sparse):
    r = np.random.default_rng(0)
    X = (r.random((50, 9)) < 0.3).astype(np.float32)
    W = r.normal(size=(9, 4)).astype(np.float32)
    bh = r.normal(size=4).astype(np.float32)
    whole = bernoulli(expit(2.0 * (X @ W) + bh), np.random.default_rng(1), dtype=W.dtype)
    monkeypatch.setattr(_pretrain_blocks, "SAMPLE_UP_ROWS", 7)   # 8 chunks, the last short
    data = sp.csr_matrix(X) if sparse else X
    rng = np.random.default_rng(1)
    np.testing.assert_array_equal(_pretrain_blocks.sample_up(data, W, bh, 2.0, rng), whole)
    # and skipping the draw leaves the stream where drawing it would
    skipped = np.random.default_rng(1)
    _pretrain_blocks.skip_sample_up(data, W, skipped)
    assert skipped.random() == rng.random()


@pytest.mark.parametrize("verbose", [0, 1])
def test_dbm_fit_holds_no_copy_of_its_training_rows(verbose, capsys):
    # 64 visible units under a 64-128 stack: the top layer's states alone would be
    # twice the data's float32 bytes, its float64 uniforms four times. What a fit
    # needs: the held-out slice (0.1), the first layer's states for the second RBM
    # (1.0 at 64 units) and fixed costs (chains, ladders, 0.3-0.5 here). A copy of
    # the training rows (+0.9), unchunked sampling or the verbose pre-training line's
    # activations of all rows at once (twice the data and more) would break the bound.
    X = (np.random.default_rng(0).random((30000, 64)) < 0.2).astype(np.float32)
    est = DBMCAST(n_components=(64, 128), n_iter=1, early_stopping=True,
                  pretrain_n_iter=1, random_state=0, verbose=verbose)
    assert _peak_over(lambda: est.fit(X), X.nbytes) < 2.1


def test_grbm_early_stopping_holds_no_copy_of_its_training_rows():
    X = np.random.default_rng(0).normal(size=(20000, 16)).astype(np.float32)
    est = GaussianBernoulliRBM(n_components=4, n_iter=2, batch_size=500,
                               early_stopping=True, random_state=0)
    # the held-out slice (0.1) and scoring it; a copy of the training rows adds 0.9
    assert _peak_over(lambda: est.fit(X), X.nbytes) < 1.0


@pytest.mark.parametrize("make", [
    lambda: DBMCAST(n_components=(6, 4), n_iter=3, early_stopping=True, batch_size=40,
                    random_state=0),
    lambda: GaussianBernoulliRBM(n_components=5, n_iter=3, early_stopping=True,
                                 batch_size=40, random_state=0)])
def test_a_fit_on_the_view_is_the_fit_on_the_copy(monkeypatch, make):
    # the view must hand every consumer the rows the copy held, in the same order
    r = np.random.default_rng(3)
    X = (r.random((700, 15)) < 0.3).astype(np.float32)
    if isinstance(make(), GaussianBernoulliRBM):
        X = r.normal(size=(700, 15))
    viewed = make().fit(X)
    monkeypatch.setattr(stopping.EarlyStopping, "training_rows",
                        lambda self, X: stopping.training_subset(X, self.rows))
    copied = make().fit(X)
    assert viewed.validation_scores_ == copied.validation_scores_
    for name in ("coefs_", "intercepts_", "components_", "mean_", "log_variance_"):
        if hasattr(copied, name):
            a, b = getattr(viewed, name), getattr(copied, name)
            for u, w in zip(a, b) if isinstance(a, list) else [(a, b)]:
                np.testing.assert_array_equal(u, w)


@pytest.mark.parametrize("sparse", [False, True])
def test_row_view_reads_the_rows_it_stands_for(monkeypatch, sparse):
    r = np.random.default_rng(0)
    X = r.normal(size=(40, 5))
    X[r.random(X.shape) < 0.5] = 0.0
    rows = np.sort(r.choice(40, 25, replace=False))
    base = sp.csr_matrix(X) if sparse else X
    view, copy = RowView(base, rows), base[rows]
    assert view.shape == copy.shape and view.dtype == copy.dtype and view.shape[0] == 25
    assert view.size == 25 * 5
    for key in (slice(3, 11), np.array([0, 7, 24]), slice(None)):
        a, b = dense_rows(view, key), dense_rows(copy, key)
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(gather_rows(view, [4, 4, 0]), gather_rows(copy, [4, 4, 0]))
    monkeypatch.setattr(RowView.chunks, "__defaults__", (6,))     # 5 chunks, the last short
    assert max_abs(view) == max_abs(copy)
    np.testing.assert_allclose(column_means(view), column_means(copy), rtol=1e-13)
    nan = X.copy()
    nan[rows[-1], 2] = np.nan
    assert np.isnan(max_abs(RowView(nan, rows)))


def test_grbm_pass_makes_no_copy_of_the_data():
    X = np.random.default_rng(0).normal(size=(20000, 16)).astype(np.float32)
    est = GaussianBernoulliRBM(n_components=4, n_iter=2, batch_size=500, random_state=0)
    # the training rows are the data itself (no held-out slice, float32 kept):
    # 1.0 before the change (abs of the whole data every pass)
    assert _peak_over(lambda: est.fit(X), X.nbytes) < 0.5


def test_max_abs_without_a_temporary_keeps_its_answers():
    X = np.array([[1.0, -3.5], [2.0, 0.5]])
    assert max_abs(X) == 3.5 == max_abs(sp.csr_matrix(X)) == max_abs(X.astype(np.float32))
    assert max_abs(-X) == 3.5
    assert np.isnan(max_abs(np.array([[np.nan, 1.0]])))
    assert np.isnan(max_abs(np.array([[1.0, np.nan]])))


@pytest.mark.parametrize("inference", ["online_vb", "dsghmc_gibbs", "dsghmc_nais", "gibbs"])
@pytest.mark.parametrize("sizes", [(6,), (6, 4)])
def test_sbn_float32_input_fits_as_float64_input(inference, sizes):
    X = np.random.default_rng(0).random((300, 20)) < 0.3
    fits = []
    for dtype in (np.float64, np.float32):
        est = BayesianSBN(n_components=sizes, inference=inference, n_iter=2, batch_size=50,
                          random_state=0).fit(X.astype(dtype))
        fits.append((est.coefs_, est.score_samples(X[:20].astype(float))))
    for a, b in zip(fits[0][0], fits[1][0]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(fits[0][1], fits[1][1])


def test_sbn_streaming_fit_keeps_float32_data_as_it_is():
    X = (np.random.default_rng(0).random((20000, 64)) < 0.2).astype(np.float32)
    est = BayesianSBN(n_components=8, inference="online_vb", n_iter=1, batch_size=500,
                      random_state=0)
    # a float64 copy alone would be 2.0
    assert _peak_over(lambda: est.fit(X), X.nbytes) < 1.0
