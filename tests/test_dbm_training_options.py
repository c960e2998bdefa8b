"""DBMCAST ``average``, ``momentum`` and ``n_gibbs_steps`` (issues 24, 25)."""

import pickle

import numpy as np
import pytest

from skdgm import DBMCAST
from _averaging_checks import assert_fitted_is_the_average_of_the_iterates


@pytest.fixture(scope="module")
def X():
    return (np.random.default_rng(0).random((60, 8)) < 0.3).astype(float)


def _dbm(**kw):
    base = dict(n_components=(4, 3), batch_size=20, random_state=0, pretrain=False,
                dtype="float64", n_iter=3, early_stopping=False, average=0.0)
    return DBMCAST(**{**base, **kw})


def _params(coefs, intercepts):
    return list(coefs) + list(intercepts)


def _chains(est):
    return [a.copy() for a in est._sampler_obj.layers]


def test_average_leaves_the_trajectory_and_the_chains_unchanged(X):
    plain = _dbm().fit(X)
    avg = _dbm(average=0.9).fit(X)
    it = avg._iterate
    for a, b in zip(_params(it.coefs, it.intercepts), _params(plain.coefs_, plain.intercepts_)):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(_chains(avg), _chains(plain)):
        np.testing.assert_array_equal(a, b)
    # and the fitted parameters are the average, not the iterate
    assert not np.array_equal(avg.coefs_[0], it.coefs[0])


def test_averaged_parameters_equal_the_reference_average_of_the_iterates(X):
    assert_fitted_is_the_average_of_the_iterates(
        _dbm, X, lambda est: _params(est._iterate.coefs, est._iterate.intercepts),
        lambda est: _params(est.coefs_, est.intercepts_))


def test_pickle_then_partial_fit_equals_partial_fit(X):
    est = _dbm(average=0.9, momentum=0.5).fit(X)
    copy = pickle.loads(pickle.dumps(est))
    est.partial_fit(X)
    copy.partial_fit(X)
    for a, b in zip(_params(est.coefs_, est.intercepts_), _params(copy.coefs_, copy.intercepts_)):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(est._iterate.coefs, copy._iterate.coefs):
        np.testing.assert_array_equal(a, b)


def test_refit_starts_a_new_average_and_momentum(X):
    est = _dbm(average=0.9, momentum=0.5)
    first = [a.copy() for a in est.fit(X).coefs_]
    est.partial_fit(X)
    for a, b in zip(est.fit(X).coefs_, first):
        np.testing.assert_array_equal(a, b)


def test_switching_the_average_off_between_partial_fit_calls(X):
    est = _dbm(average=0.9).fit(X)
    est.set_params(average=0.0).partial_fit(X)
    for a, b in zip(est.coefs_, est._iterate.coefs):
        np.testing.assert_array_equal(a, b)
    assert est._iterate.average is None
    # and on again: the average starts from the current iterate
    est.set_params(average=0.9).partial_fit(X)
    assert est._iterate.average.n_updates == 3


def test_momentum_zero_is_the_plain_step_and_momentum_changes_the_path(X):
    plain = _dbm().fit(X)
    zero = _dbm(momentum=0.0).fit(X)
    moved = _dbm(momentum=0.5).fit(X)
    np.testing.assert_array_equal(plain.coefs_[0], zero.coefs_[0])
    assert not np.allclose(plain.coefs_[0], moved.coefs_[0])
    assert zero._iterate.optimizer.velocity is None
    assert len(moved._iterate.optimizer.velocity) == 5


def test_momentum_first_update_equals_the_plain_update(X):
    # the velocity starts at zero: one update of each is the same step
    a = _dbm(batch_size=X.shape[0], n_iter=1).fit(X)
    b = _dbm(batch_size=X.shape[0], n_iter=1, momentum=0.9).fit(X)
    np.testing.assert_array_equal(a.coefs_[0], b.coefs_[0])


@pytest.mark.parametrize("sampler", ["sap", "cast"])
def test_n_gibbs_steps_advances_the_sampler_k_times_per_update(X, sampler):
    est = _dbm(n_gibbs_steps=3, sampler=sampler).fit(X)
    assert est._sampler_obj.n_steps == 3 * est.n_updates_
    one = _dbm(sampler=sampler).fit(X)
    assert one._sampler_obj.n_steps == one.n_updates_
    assert not np.allclose(est.coefs_[0], one.coefs_[0])


@pytest.mark.parametrize("param, value", [("average", 1.0), ("average", -0.1),
                                          ("momentum", 1.0), ("momentum", -0.5),
                                          ("n_gibbs_steps", 0)])
def test_invalid_values_raise_and_leave_the_estimator_as_it_was(X, param, value):
    est = _dbm(average=0.9).fit(X)
    before = [a.copy() for a in est.coefs_]
    with pytest.raises(ValueError, match=param):
        est.set_params(**{param: value}).partial_fit(X)
    for a, b in zip(est.coefs_, before):
        np.testing.assert_array_equal(a, b)


def test_early_stopping_keeps_the_best_pass_average_and_its_iterate(X):
    Xb = np.vstack([X] * 100)        # 6,000 rows: early stopping on
    est = DBMCAST(n_components=(4, 3), random_state=0, pretrain=False, n_iter=4,
                  early_stopping=True, n_iter_no_change=2, average=0.9, n_ais_runs=4)
    est.fit(Xb)
    best = est.best_iter_
    assert 1 <= best <= est.n_iter_
    # the kept average is consistent with the kept iterate's own average object
    for a, b in zip(est.coefs_, est._iterate.fitted()[0]):
        np.testing.assert_array_equal(a, b)


def test_default_averages_and_the_fitted_parameters_are_the_average(X):
    est = DBMCAST(n_components=(4, 3), batch_size=20, random_state=0, pretrain=False,
                  n_iter=3)
    assert est.average == 0.999
    est.fit(X)
    mean = est._iterate.average.value()
    for a, b in zip(_params(est.coefs_, est.intercepts_), mean):
        np.testing.assert_array_equal(a, b)


def test_a_model_pickled_before_the_options_existed_loads_with_their_defaults(X):
    est = _dbm(average=0.9).fit(X)
    state = est.__getstate__()
    for name in ("average", "momentum", "n_gibbs_steps", "_iterate"):
        state.pop(name)     # as pickled by a version without them
    old = DBMCAST.__new__(DBMCAST)
    old.__setstate__(state)
    assert (old.average, old.momentum, old.n_gibbs_steps) == (0.999, 0.0, 1)
    assert old.get_params()["average"] == 0.999
    # it continues from its parameters, the average starting there
    old.set_params(average=0.9).partial_fit(X)
    assert old._iterate.average.n_updates == 3


def test_held_out_figure_is_the_fast_score_where_log_z_is_exact(X):
    # odd layers of 4 units: log Z is enumerated, so early stopping's figure must
    # be exactly the default score (the fast bound), pass after pass
    est = _dbm(average=0.9).fit(X)
    assert est._validation_score(X) == pytest.approx(est.score(X), rel=0, abs=1e-9)
    assert est.score(X, bound="tight") != est._validation_score(X)


def test_held_out_log_z_is_one_group_of_held_out_betas_on_a_fixed_stream(X, monkeypatch):
    from skdgm.dbm import _scoring
    seen = []
    real = _scoring.estimate_log_partition

    def spy(*args, **kwargs):
        seen.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(_scoring, "estimate_log_partition", spy)
    est = _dbm(n_components=(20, 4)).fit(X)     # 20 + ... odd units: AIS, not enumeration
    first, again = est._validation_score(X), est._validation_score(X)
    assert first == again           # common random numbers: the same figure twice
    assert [(k["n_betas"], k["n_groups"], k["n_runs"]) for k in seen] == \
        [(_scoring.HELD_OUT_BETAS, 1, _scoring.HELD_OUT_RUNS)] * 2
