"""GaussianBernoulliRBM ``average``: iterate averaging of the modified-CD iterates.

The shared :class:`skdgm._core.averaging.ParameterAverage` (as DBMCAST's
``average``): the raw iterate takes every update, the fitted parameters are its
exponential average.
"""

import pickle

import numpy as np
import pytest

from skdgm import GaussianBernoulliRBM
from skdgm.exceptions import DivergenceError
from _averaging_checks import assert_fitted_is_the_average_of_the_iterates


@pytest.fixture(scope="module")
def X():
    return np.random.default_rng(0).normal(size=(60, 5))


def _grbm(**kw):
    base = dict(n_components=3, batch_size=20, cd_steps=5, random_state=0, n_iter=3,
                early_stopping=False, dtype="float64")
    return GaussianBernoulliRBM(**{**base, **kw})


def _fitted(est):
    return [est.components_, est.intercept_hidden_, est.mean_, est.log_variance_]


def test_average_leaves_the_iterate_path_unchanged(X):
    plain = _grbm().fit(X)
    avg = _grbm(average=0.9).fit(X)
    # the raw iterate is the plain fit's parameters, update for update
    for a, b in zip(avg._iterate.params, _fitted(plain)):
        np.testing.assert_array_equal(a, b)
    # and the fitted parameters are the average, not the iterate
    assert not np.array_equal(avg.components_, avg._iterate.params.W)
    np.testing.assert_array_equal(avg.variance_, np.exp(avg.log_variance_))


def test_averaged_parameters_equal_the_reference_average_of_the_iterates(X):
    # the average starts from the parameters before the first update
    init = _grbm(batch_size=X.shape[0], n_iter=1)
    init._init_params(X.shape[1], np.dtype(np.float64))
    assert_fitted_is_the_average_of_the_iterates(
        _grbm, X, lambda est: est._iterate.params, _fitted, start=[_fitted(init)])


def test_zero_average_is_the_fit_without_it(X):
    a = _grbm().fit(X)
    b = _grbm(average=0.0).fit(X)
    for u, w in zip(_fitted(a), _fitted(b)):
        np.testing.assert_array_equal(u, w)
    assert b._iterate is None


def test_switching_the_average_off_and_on_between_partial_fit_calls(X):
    est = _grbm(average=0.9).fit(X)
    raw = [a.copy() for a in est._iterate.params]
    plain = _grbm().fit(X)
    # off: the fitted parameters become the raw iterate, which trains on
    est.set_params(average=0.0).partial_fit(X)
    plain.partial_fit(X)
    assert est._iterate is None
    for u, w in zip(_fitted(est), _fitted(plain)):
        np.testing.assert_array_equal(u, w)
    assert not np.array_equal(raw[0], est.components_)
    # on again: a new average, started from the current parameters
    est.set_params(average=0.9).partial_fit(X)
    assert est._iterate.average.n_updates == 1 + 3


def test_pickle_then_partial_fit_equals_partial_fit(X):
    est = _grbm(average=0.9).fit(X)
    copy = pickle.loads(pickle.dumps(est))
    est.partial_fit(X)
    copy.partial_fit(X)
    for a, b in zip(_fitted(est) + list(est._iterate.params),
                    _fitted(copy) + list(copy._iterate.params)):
        np.testing.assert_array_equal(a, b)


def test_refit_starts_a_new_average(X):
    est = _grbm(average=0.9)
    first = est.fit(X).components_.copy()
    est.partial_fit(X)
    np.testing.assert_array_equal(est.fit(X).components_, first)


@pytest.mark.parametrize("value", [1.0, -0.1])
def test_invalid_average_raises_and_leaves_the_estimator_as_it_was(X, value):
    est = _grbm(average=0.9).fit(X)
    before = est.components_.copy()
    with pytest.raises(ValueError, match="average"):
        est.set_params(average=value).partial_fit(X)
    np.testing.assert_array_equal(est.components_, before)


def test_divergence_leaves_the_iterate_and_its_average_as_they_were(X):
    est = _grbm(average=0.9).fit(X)
    before = [a.copy() for a in _fitted(est) + list(est._iterate.params)]
    n = est._iterate.average.n_updates
    with pytest.raises(DivergenceError):
        est.set_params(learning_rate=1e30, optimizer="sgd", clip_grad_norm=None)
        est.partial_fit(X * 1e3)
    for a, b in zip(_fitted(est) + list(est._iterate.params), before):
        np.testing.assert_array_equal(a, b)
    assert est._iterate.average.n_updates == n


def test_early_stopping_keeps_the_best_pass_average(X):
    Xb = np.random.default_rng(1).normal(size=(6000, 5))
    est = GaussianBernoulliRBM(n_components=3, cd_steps=5, random_state=0, n_iter=4,
                               early_stopping=True, n_iter_no_change=2, average=0.99)
    est.fit(Xb)
    assert 1 <= est.best_iter_ <= est.n_iter_
    for a, b in zip(_fitted(est), est._iterate.fitted()):
        np.testing.assert_array_equal(a, b)
