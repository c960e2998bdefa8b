"""Early stopping (``early_stopping``, ``validation_fraction``, ``n_iter_no_change``,
``tol``), written once in the training skeleton and offered by the estimators trained
by stochastic optimisation (GaussianBernoulliRBM, DBMCAST)."""

import numpy as np
import pytest

from skdgm import DBMCAST, GaussianBernoulliRBM
from skdgm._core.base import EarlyStopping, training_dtype

# Small enough that every validation score is exact (log Z by enumeration), so the
# tests compare exact numbers.
CHEAP = {
    "GaussianBernoulliRBM": lambda **kw: GaussianBernoulliRBM(
        **{**dict(n_components=4, cd_steps=3, n_iter=12, batch_size=20, random_state=0), **kw}),
    "DBMCAST": lambda **kw: DBMCAST(
        **{**dict(n_components=(4, 3), n_iter=12, n_chains=8, batch_size=20,
                  pretrain_n_iter=1, n_temperatures=4, beta_min=0.6, swap_interval=3,
                  random_state=0), **kw}),
}
NAMES = sorted(CHEAP)


def data(name, n=120, d=6, seed=0):
    rng = np.random.default_rng(seed)
    if name == "DBMCAST":
        return (rng.random((n, d)) < 0.3).astype(float)
    return rng.normal(size=(n, d))


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", NAMES)
def test_keeps_the_best_pass(name):
    X = data(name)
    est = CHEAP[name](early_stopping=True, validation_fraction=0.25, n_iter_no_change=50)
    est.fit(X)
    scores = est.validation_scores_
    assert len(scores) == est.n_iter_ == 12
    assert scores == est.history_["validation_score"]
    assert est.best_validation_score_ == max(scores)
    assert est.best_iter_ == int(np.argmax(scores)) + 1
    assert est.best_iter_ < est.n_iter_      # so that keeping the best pass is exercised
    # the kept parameters are those of the best pass: rescoring the same held-out
    # rows (the split is a function of random_state) gives the best score exactly;
    # estimators with a training dtype held them out after converting X to it
    if "dtype" in est.get_params():
        X = X.astype(training_dtype(est.dtype, X))
    val = EarlyStopping.from_estimator(est, X).X_val
    assert est._validation_score(val) == pytest.approx(est.best_validation_score_,
                                                       rel=1e-10, abs=1e-10)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", NAMES)
def test_stops_after_n_iter_no_change(name):
    # an improvement must exceed tol: with a huge tol no pass after the first counts
    # as progress, so training stops n_iter_no_change passes later
    est = CHEAP[name](early_stopping=True, tol=1e9, n_iter_no_change=2).fit(data(name))
    assert est.n_iter_ == 3 and len(est.validation_scores_) == 3
    off = CHEAP[name]().fit(data(name))
    assert off.n_iter_ == 12 and not hasattr(off, "validation_scores_")


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", NAMES)
def test_never_trains_on_the_held_out_rows(name):
    X = data(name)
    stopper = EarlyStopping.from_estimator(CHEAP[name](early_stopping=True), X)
    train = stopper.training_rows(X)
    assert train.shape[0] + len(stopper.X_val) == len(X) and len(stopper.X_val) == 12
    held_out = np.setdiff1d(np.arange(len(X)), stopper.rows)
    np.testing.assert_array_equal(stopper.X_val, X[held_out])
    np.testing.assert_array_equal(train[:], X[stopper.rows])
    # the split follows random_state
    other = EarlyStopping.from_estimator(CHEAP[name](early_stopping=True, random_state=1), X)
    assert not np.array_equal(other.rows, stopper.rows)


@pytest.mark.parametrize("name", NAMES)
def test_too_few_rows_is_a_clear_error_and_changes_nothing(name):
    est = CHEAP[name](early_stopping=True, validation_fraction=0.99)
    with pytest.raises(ValueError, match="early_stopping needs at least one training"):
        est.fit(data(name, n=20))
    assert not hasattr(est, "n_features_in_")


@pytest.mark.parametrize("name", NAMES)
def test_unused_parameters_warn(name):
    with pytest.warns(UserWarning, match="n_iter_no_change=3 has no effect with "
                                         "early_stopping=False"):
        CHEAP[name](n_iter_no_change=3, n_iter=1, early_stopping=False).fit(data(name))


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", NAMES)
def test_partial_fit_ignores_it(name):
    X = data(name)
    a = CHEAP[name](early_stopping=True).partial_fit(X)
    b = CHEAP[name]().partial_fit(X)
    assert not hasattr(a, "validation_scores_")
    np.testing.assert_array_equal(a.transform(X[:5]), b.transform(X[:5]))


def test_grbm_figure_is_the_held_out_median():
    # a few held-out rows the model rates very low must not decide when to stop
    # (on MNIST the mean stopped a GRBM at pass 2, 80 nats short): the figure is
    # the median of the rows' exact log p, so an outlier row leaves it unchanged
    est = CHEAP["GaussianBernoulliRBM"](n_iter=3).fit(data("GaussianBernoulliRBM"))
    val = data("GaussianBernoulliRBM", n=21, seed=5)
    ref = est.score_samples(val)
    assert est._validation_score(val) == pytest.approx(np.median(ref), rel=1e-6)
    worse = val.copy()
    worse[np.argmin(ref)] *= 50.0                      # the worst row, far worse
    assert est.score_samples(worse).mean() < ref.mean() - 100
    assert est._validation_score(worse) == pytest.approx(est._validation_score(val),
                                                         rel=1e-6)
